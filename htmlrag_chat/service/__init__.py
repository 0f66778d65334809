"""A warm process for one-shot questions: ``htmlrag-chat serve`` keeps the models loaded, and
``ask`` hands it its question when one runs for this user with the same settings.

A fresh ``ask`` pays imports, a GPU's start and every model load each time; the service
pays them once, as Ollama keeps its models. It listens on a Unix socket in a folder only
its user can enter (``place.py``), checks each caller's user and the token it wrote beside
the socket, answers one question at a time, and streams the question's events and answer
back as JSON lines (``wire.py``); ``ask`` shows them as its own and keeps the conversation
as it always does. A question goes to a service only when it is this user's, was started
by ``serve``, and answers with the very settings ``ask`` would use (their fingerprint);
``ask`` says in one line that it did.
"""
