"""A numbered source: what the reader reads, the answer cites and every face lists.

Below the reader, the agent and the events that carry sources to the faces as soon as
pruning ends (``SourcesReady``), so that none of them reaches up for it.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit


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

    @property
    def local(self) -> bool:
        """Whether the source is one of the user's own files (``--docs``), not a web page."""
        return urlsplit(self.url).scheme == "file"

    @property
    def where(self) -> str:
        """Where the source is, in a word or two: its site, or the file's name (five
        documents listed as "local file" were told apart by nothing)."""
        if not self.local:
            return self.site
        return PurePosixPath(unquote(urlsplit(self.url).path)).name or "local file"


def cited_first(
    sources: Sequence[Source], cited: Collection[int]
) -> tuple[list[Source], list[Source]]:
    """The sources an answer cites, then those it read without citing, each in number order.

    A list a person reads starts with what the answer rests on; the rest were read (the
    pruned pages the reader got) and are shown after it, marked or folded. Numbers never
    change: they are the ``[n]`` of the answer's text, so a list in another order still
    points each citation at its page.
    """
    return [s for s in sources if s.number in cited], [s for s in sources if s.number not in cited]
