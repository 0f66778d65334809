"""Where the agent's pages come from: one protocol (``source.py``) that the web through its
recorder (``online.py``, ``recorder.py``), the user's documents (``library.py``) and the pages
a browser saved (``saved.py``) implement; the sources the user names are listed in
``registry.py``, which the rest of the program reads."""
