"""The reader backends, one module each: the configured server, a server found on this
machine, a GGUF file read by llama.cpp, a transformers model, the extractive reader. Each
owns all of it as a backend (when it answers, what it finds, its settings and extra, its
palette entries, its ``models`` row); ``reader/registry.py`` lists them in ``--reader
auto``'s order, one line each.
"""
