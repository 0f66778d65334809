"""htmlrag-chat: a local web-search answer engine for the terminal, built on HtmlRAG."""

from __future__ import annotations

__version__ = "0.1.0"
