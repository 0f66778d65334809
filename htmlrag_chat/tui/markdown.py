"""Answer text as the Markdown the transcript renders: citations become links.

``[3]`` turns into a link to ``cite:3``, so clicking it highlights source 3; the text on
screen stays ``[3]``. What is a citation is the citation filter's grammar
(``reader/citation_syntax.py``), with its caps, and a streamed answer is held back by the
same engine: only prose is linked, code spans, fenced blocks and escaped brackets
(``\\[3\\]``: a source's own footnote, quoted) are left exactly as they are. Everything else
in the answer is left to the Markdown widget, which renders text as text (no console markup,
no escape sequences: the agent already passed the answer through ``terminal_safe``).
"""

from __future__ import annotations

import re

from htmlrag_chat.reader.citation_syntax import GROUP_RE, CitationStream, expand

CITE_SCHEME = "cite:"


def link_citations(text: str) -> str:
    """A whole answer with the citations of its prose linked."""
    linker = CitationLinker()
    return linker.feed(text) + linker.finish()


class CitationLinker:
    """``link_citations`` for an answer that streams in: whether a piece is code can depend
    on an earlier one (a fence opened three pieces ago), and a citation cut between two
    pieces (or one that a "(" may yet turn into a link) waits for the next, as in the
    citation filter (``CitationStream``)."""

    def __init__(self) -> None:
        self._stream = CitationStream(_link_all)

    def feed(self, text: str) -> str:
        return self._stream.feed(text)

    def finish(self) -> str:
        return self._stream.finish()


def _link_all(prose: str) -> str:
    return GROUP_RE.sub(_link, prose)


def _link(match: re.Match[str]) -> str:
    doubled = match[0].startswith("[[")  # [[3]] links as [3], as the citation filter shows it
    inner = match[0][2:-2] if doubled else match[0][1:-1]
    return f"[\\[{inner}\\]]({CITE_SCHEME}{''.join(inner.split())})"


def cited_numbers(href: str) -> tuple[int, ...]:
    """The source numbers a ``cite:`` link names (``cite:2-4`` -> 2, 3, 4), read with the
    citation grammar and its range cap (a stored answer is data: ``cite:1-999999999`` does
    not build a huge list); () for anything else."""
    if not href.startswith(CITE_SCHEME):
        return ()
    group = f"[{href[len(CITE_SCHEME) :]}]"
    return expand(group) if GROUP_RE.fullmatch(group) else ()
