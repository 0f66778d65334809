"""A numbered source: what the reader reads, the answer cites and every face lists.

Below the reader, the agent and the events that carry sources to the faces as soon as
pruning ends (``SourcesReady``), so that none of them reaches up for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Source:
    """A numbered source as the reader sees it: its pruned HTML, that HTML's visible text
    (what citations are checked against) and how the reader gets the HTML (``rendering``:
    html, markdown or text, as the budget was counted when it was pruned)."""

    number: int
    url: str
    title: str
    html: str
    text: str
    date: str = ""  # the publication day the page declares (YYYY-MM-DD), or ""
    rendering: str = "html"

    @property
    def site(self) -> str:
        """The site the page is on, as a person names it: ``example.org``."""
        return (urlsplit(self.url).hostname or "").removeprefix("www.")
