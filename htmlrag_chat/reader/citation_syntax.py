"""The citation grammar and the one engine that streams prose past it.

A citation is a bracket group of source numbers in an answer's prose: ``[3]``, ``[1, 3]``,
``[2-4]`` (hyphen or en dash), adjacent groups ``[1][2]``, and a group doubled as some models
write it, ``[[3]]``; ``[x](url)`` is a Markdown link, not a citation. The citation filter
(``reader/citations.py``: invented numbers off the screen), the chat app's linker
(``tui/markdown.py``: citations become links that pick their source) and the check of cited
sentences all read citations with these patterns and these caps, so what one of them calls a
citation, every one does.

Characters that render as nothing (Unicode's default-ignorable code points: zero-width
space, soft hyphen, word joiner, bidi marks...) inside a bracket run would hide ``[\u200b99]``
from the grammar but not from the reader's eye, which sees ``[99]``. They are dropped from
every bracket run of prose (``[`` and the citation characters after it, closed or not)
before anything is decided, so such a group is read as the citation it spells.

``CitationStream`` is the streaming half, shared by the filter and the linker: text arrives
in pieces, code and escaped characters pass at once (``literal.CodeScanner``), and prose is
held back only while its end could still become a citation; whatever is decided is handed
to the caller's ``decide`` (rewrite the numbers, or link them) and shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from htmlrag_chat.reader.literal import CodeScanner

# [1-100] is a slip, not a hundred sources: a range expands to at most this many numbers.
RANGE_CAP = 20
# The longest bracket group read as a citation, brackets included. A stream holds back at most
# this much (plus the space before it), so it bounds the delay a citation can cause.
MAX_GROUP = 32

NUMBER = "[0-9]+"
ITEM = rf"({NUMBER})(?: *[-\u2013] *({NUMBER}))?"  # hyphen or en dash
_ITEMS = rf" *{ITEM}(?: *, *{ITEM})* *"
# The lookahead caps the length; "(" after the group makes it a markdown link, not a citation.
# (An escaped "\\[" never reaches these patterns: CodeScanner hands it out as literal text.)
GROUP = (
    rf"(?:\[\[(?=[^\]\n]{{0,{MAX_GROUP - 4}}}\]\]){_ITEMS}\]\]"
    rf"|\[(?=[^\]\n]{{0,{MAX_GROUP - 2}}}\]){_ITEMS}\])(?!\()"
)
GROUP_RE = re.compile(GROUP)
# After a group: the evidence check placed it, not the reader (``evidence/correction.py``).
CORRECTED = "\u2020"
ITEM_RE = re.compile(ITEM)
# Adjacent groups like [1][2] with the one space before them, which goes when all of them go.
CHAIN_RE = re.compile(rf"(?P<space> ?)(?P<chain>(?:{GROUP})+)")
# The end of a stream that could still become a citation: an open bracket (or two) followed
# only by citation characters, or a whole group whose next character (a link's "(", a
# doubled group's second "]") is not known yet; with the groups right before it, since
# whether their space goes depends on it.
_OPEN_TAIL = re.compile(rf" ?(?:{GROUP})*(?P<open>\[\[?[0-9 ,\-\u2013]*\]?\]?)\Z")
# Default_Ignorable_Code_Point (Unicode's DerivedCoreProperties.txt).
_IGNORABLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
_RUN_CHARS = f"0-9 ,\\-\u2013{_IGNORABLE}"
_RUN = re.compile(f"\\[[{_RUN_CHARS}]*")
_RUN_START = re.compile(f"[{_RUN_CHARS}]*")  # prose that goes on with a run already open
_RUN_END = re.compile(f"\\[[{_RUN_CHARS}]*\\Z")
_INVISIBLE = re.compile(f"[{_IGNORABLE}]+")


def span(low: int, high: int) -> range:
    """The numbers of a range, counted up from its lower end however it was written, to
    at most ``RANGE_CAP`` numbers."""
    first, last = sorted((low, high))
    return range(first, min(last, first + RANGE_CAP - 1) + 1)


def expand(group: str) -> tuple[int, ...]:
    """The numbers of one group, ranges expanded (``span``)."""
    items = ITEM_RE.findall(group)
    return tuple(number for low, high in items for number in span(int(low), int(high or low)))


def unhide(prose: str, in_run: bool = False) -> str:
    """``prose`` without the invisible characters of its bracket runs; ``in_run``: it goes
    on with a run that the text before it opened."""
    cleaned = _RUN.sub(lambda m: _INVISIBLE.sub("", m[0]), prose)
    if in_run:
        start = _RUN_START.match(cleaned)
        assert start is not None  # a starred class: it matches, empty at worst
        cleaned = _INVISIBLE.sub("", cleaned[: start.end()]) + cleaned[start.end() :]
    return cleaned


def ends_in_run(prose: str, in_run: bool = False) -> bool:
    """Whether a bracket run is still open at the end of ``prose`` (``in_run``: one was
    open before it)."""
    if _RUN_START.fullmatch(prose):
        return in_run
    return _RUN_END.search(prose) is not None


def decided_end(prose: str) -> int:
    """How much of the prose streamed so far can be shown: all but an open citation at its
    end with the space before it (which goes if the citation does), or else a trailing space
    (which goes if a citation follows). Everything else renders the same whatever comes next."""
    tail = _OPEN_TAIL.search(prose)
    if tail and len(tail["open"]) <= MAX_GROUP:
        return tail.start()
    return len(prose) - prose.endswith(" ")


class CitationStream:
    """Markdown streamed in pieces, released as soon as nothing that follows can change how
    its citations read. Literal text (code, escapes) passes as it is; each run of decided
    prose goes through ``decide`` first. The output of all ``feed`` calls and ``finish`` is
    the same however the text was cut."""

    def __init__(self, decide: Callable[[str], str]) -> None:
        self._decide = decide
        self._code = CodeScanner()
        self._prose = ""  # prose held back: it could still end in a citation
        self._in_run = False  # the prose shown so far ends inside a bracket run

    def feed(self, chunk: str) -> str:
        """The part of the text so far that is decided now."""
        return self._take(self._code.feed(chunk), final=False)

    def finish(self) -> str:
        """Whatever was held back, decided now that the stream has ended."""
        return self._take(self._code.feed("", final=True), final=True)

    def interrupt(self) -> str:
        """Everything held back, decided: text that is not Markdown comes next (a source
        quoted verbatim), and no citation goes on across it, nor a line start."""
        decided = self.finish()
        self._code.line_start = False
        return decided

    def _take(self, pieces: list[tuple[bool, str]], final: bool) -> str:
        shown: list[str] = []
        for literal, piece in pieces:
            if literal:  # nothing continues a citation across code: the prose before is decided
                shown += [self._decide(self._prose), piece]
                self._prose, self._in_run = "", False
            else:
                self._prose = unhide(self._prose + piece, self._in_run)
        # Text the scanner holds back starts with a backtick or backslash, which ends any
        # citation: then the prose before it is decided too.
        end = len(self._prose) if final or self._code.pending else decided_end(self._prose)
        decided, self._prose = self._prose[:end], self._prose[end:]
        shown.append(self._decide(decided))
        self._in_run = ends_in_run(decided, self._in_run)
        return "".join(shown)
