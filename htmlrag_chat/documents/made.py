"""What a document's converter makes of a file: an HTML page, cleaned next like a web page."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Made:
    """The HTML, its encoding (None: found as a web page's is, from a BOM or ``<meta>``),
    and why it stops short of the file's end (None: it does not)."""

    html: bytes
    encoding: str | None = "utf-8"
    cut: str | None = None
