"""The SQLite cache: searches, pages, derived artefacts, embeddings and chat history.

One file (``default_cache_path``) holds everything, so replay mode can answer from it with
no network, and recordings (``recording.py``) move it between machines as JSON lines.
"""
