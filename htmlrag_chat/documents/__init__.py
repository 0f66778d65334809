"""Your own files as pages: found under the folders given (``walk.py``), each type turned
into HTML and cleaned like a page (``convert.py``, ``pdf.py``)."""
