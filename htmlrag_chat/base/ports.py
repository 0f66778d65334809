"""The default ports of the local LLM servers that ``--reader auto`` asks on 127.0.0.1.

A table of its own, below the settings and the reader: the settings take the default
``probe_ports`` from it and ``reader/discover.py`` names each server by it, so the settings
never import the reader stack.
"""

from __future__ import annotations

# The default port of each server; a user's own port goes in --base-url instead.
SERVERS = {11434: "Ollama", 1234: "LM Studio", 8080: "llama.cpp", 8000: "vLLM"}
DEFAULT_PORTS = tuple(SERVERS)
