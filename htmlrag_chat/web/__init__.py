"""The pipeline's inputs from the web: search results and downloaded pages."""
