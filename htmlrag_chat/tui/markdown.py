"""Answer text as the Markdown the transcript renders: citations become links.

``[3]`` turns into a link to ``cite:3``, so clicking it highlights source 3; the text on
screen stays ``[3]``. Only prose is linked: code spans and fenced blocks are left exactly as
they are (``x[1]`` in code is code), and so are escaped brackets (``\\[3\\]``: a source's
own footnote, quoted). Everything else in the answer is left to the Markdown widget, which
renders text as text (no console markup, no escape sequences: the agent already passed the
answer through ``terminal_safe``).
"""

from __future__ import annotations

import re

from htmlrag_chat.reader.markup import CodeScanner

# The groups the citation filter lets through: [3], [1, 2], [2-4], [1][2]; not [x](url). An
# escaped \[3] is no group: the code scanner hands it out as literal text, never linked.
_CITATION = re.compile(r"\[(\d+(?:\s*[,\-\u2013]\s*\d+)*)\](?!\()")
_OPEN_TAIL = re.compile(r"\[[\d\s,\-\u2013]{0,48}\]?\Z")
CITE_SCHEME = "cite:"
_WIDEST_RANGE = 50  # a stored answer is data: [1-999999999] must not build a huge list


def link_citations(text: str) -> str:
    """A whole answer with the citations of its prose linked."""
    linker = CitationLinker()
    return linker.feed(text) + linker.finish()


class CitationLinker:
    """``link_citations`` for an answer that streams in. Whether a piece is code can depend
    on an earlier one (a fence opened three pieces ago), so the code scanner's state is kept
    from piece to piece; and a citation cut between two pieces (or one that a "(" may yet
    turn into a link) waits for the next."""

    def __init__(self) -> None:
        self._code = CodeScanner()
        self._prose = ""  # held back: it may end in a citation not complete yet

    def feed(self, text: str) -> str:
        return self._link(self._code.feed(text), final=False)

    def finish(self) -> str:
        return self._link(self._code.feed("", final=True), final=True)

    def _link(self, pieces: list[tuple[bool, str]], final: bool) -> str:
        linked: list[str] = []
        for code, piece in pieces:
            if code:
                linked += [_CITATION.sub(_link, self._prose), piece]
                self._prose = ""
            else:
                self._prose += piece
        tail = None if final or self._code.pending else _OPEN_TAIL.search(self._prose)
        end = tail.start() if tail else len(self._prose)
        linked.append(_CITATION.sub(_link, self._prose[:end]))
        self._prose = self._prose[end:]
        return "".join(linked)


def _link(match: re.Match[str]) -> str:
    group = match.group(1)
    return f"[\\[{group}\\]]({CITE_SCHEME}{''.join(group.split())})"


def cited_numbers(href: str) -> tuple[int, ...]:
    """The source numbers a ``cite:`` link names (``cite:2-4`` -> 2, 3, 4); () otherwise."""
    if not href.startswith(CITE_SCHEME):
        return ()
    numbers: list[int] = []
    for part in href[len(CITE_SCHEME) :].split(","):
        low, _, high = part.replace("\u2013", "-").partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return ()
        if high and int(high) - int(low) > _WIDEST_RANGE:
            return ()
        numbers.extend(range(int(low), int(high or low) + 1))
    return tuple(numbers)
