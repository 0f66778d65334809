"""Research mode: a question taken apart into parts, each searched and answered with checked
citations by the agent, then one report with one list of references (``runner.py``), shown
as it goes (``progress.py``) and exported as Markdown, HTML or JSON. Below the faces, above
the agent and the conversations: no widgets and no commands here."""
