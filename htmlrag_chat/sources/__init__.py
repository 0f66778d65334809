"""Where the agent's pages come from: one protocol (``source.py``) that the web through its
recorder (``online.py``, ``recorder.py``), the user's documents (``library.py``) and the pages
a browser saved (``saved.py``) implement."""
