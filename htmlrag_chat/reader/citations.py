"""Citations: keep invented ones off the screen, and read an answer's sentences with them.

A reader LLM cites numbered sources as ``[1]``, ``[1, 3]`` or ``[2-4]``, and it can go wrong in
two ways: it cites a number no source has, or it cites a real source for a claim that source
does not make. The first is fixed while the answer streams: ``CitationFilter`` holds back only
what could still become a citation, so plain text reaches the terminal at once. For the
second, ``answer_sentences`` reads the finished answer into sentences with what each cites,
and ``evidence/`` finds the words of the sources that back each one (or flags it). What a
citation is, and when streamed prose is decided, is ``citation_syntax``'s, shared with the
chat app's citation links.

Only the answer's own prose cites. Brackets in code (``arr[0]``, a fenced ``x[1]``), text a
reader quotes from a source (``Quoted``: its ``[3]`` is the page's footnote), and
backslash-escaped brackets (``\\[3\\]``, how source text reaches an LLM, ``escape_markers``)
are never read as citations, and never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from htmlrag_chat.reader.citation_syntax import (
    CHAIN_RE,
    CORRECTED,
    GROUP,
    GROUP_RE,
    ITEM_RE,
    CitationStream,
    expand,
    span,
    unhide,
)
from htmlrag_chat.reader.literal import CodeScanner, unescape_markdown

# One sentence of a line: text up to its end mark (a CJK one needs no space after it), with
# the citations that follow that mark.
_SENTENCE = re.compile(rf".+?(?:(?:[.!?]+(?=\s|\[|\Z)|[\u3002\uff01\uff1f]+)(?: *{GROUP})*|\Z)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)\s+")
# "e.g.", "z. B.", "bzw.": a period that ends a word, not a sentence; nor does the period of
# an ordinal alone ("2. THW Kiel 18 28 : 8", a quoted table row or list item, whose quote
# escapes that period at the start of its line: "2\.").
_ABBREVIATION = re.compile(
    r"(?:(?:\b[^\W\d_]|\b(?:bzw|ca|vs|dr|mr|mrs|ms|nr))\.|\A\d{1,3}\\?\.)\Z", re.IGNORECASE
)
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[.,;:!?])")
# A citation group as it is left out of a sentence's text, with the check's mark if any.
_CITED = re.compile(rf"(?:{GROUP}){CORRECTED}?")
# A sentence's end mark, where a citation of a sentence that cited none goes.
_END_MARK = re.compile(r"[.!?\u3002\uff01\uff1f]+\s*\Z")
# Brackets of literal text (code, escapes) while sentences are read: private-use stand-ins.
_MASK = str.maketrans("[]", "\ue000\ue001")
_UNMASK = str.maketrans("\ue000\ue001", "[]")

_WORD = re.compile(r"[^\W_]")
_FENCES = ("```", "~~~")
# Shared leading letters that count as one word ("released"/"release"), and the words that
# say nothing: the extractive reader's matching.
PREFIX = 5
STOPWORDS = frozenset(
    """a an the and or but not no nor of to in on at by for with from as into onto about over
    under after before between than then so such also very is are was were be been being it its
    this that these those which who whom whose what when where why how there their they them he
    she his her we our you your can could will would should may might must has have had do does
    did all any some more most other only just
    der die das den dem des ein eine einen einem einer eines und oder aber nicht kein keine ist
    sind war waren wird werden wurde wurden sein hat haben hatte mit von zu zum zur im am an auf
    aus bei für über unter nach vor durch als auch sich es er sie wir ihr ich du man dass wie wo
    wer noch nur sehr kann können mehr dieser diese dieses jedoch""".split()
)


@dataclass(frozen=True)
class AnswerSentence:
    """One sentence of an answer and the real sources it cites (``evidence/`` checks it)."""

    text: str  # without its citation marks, whitespace-normalized
    sources: tuple[int, ...]  # the valid cited numbers, in order, without duplicates


def parse_citations(text: str) -> list[tuple[int, ...]]:
    """The numbers of every citation group in the prose of ``text``, ranges expanded, as
    written."""
    return [
        expand(match[0])
        for literal, piece in CodeScanner().feed(text, final=True)
        if not literal
        for match in GROUP_RE.finditer(unhide(piece))
    ]


def _filter_group(group: str, sources: int) -> tuple[str, list[int]]:
    """The group as it may be shown ("" when none of it is real; a doubled one as a single
    one) and the numbers it loses. A range with an end no source has singles out nothing
    between its ends: ``[1-99]`` of five sources cites source 1, not all five."""
    kept: list[int] = []
    dropped: list[int] = []
    for low, high in ITEM_RE.findall(group):
        ends = [int(low), int(high)] if high else [int(low)]
        real = [n for n in ends if 1 <= n <= sources]
        if len(real) == len(ends):
            kept.extend(span(ends[0], ends[-1]))
        else:
            kept.extend(real)
            dropped.extend(n for n in ends if n not in real)
    if not dropped:
        return group.removeprefix("[").removesuffix("]") if group.startswith("[[") else group, []
    numbers = dict.fromkeys(kept)
    return (f"[{', '.join(map(str, numbers))}]" if numbers else ""), dropped


class CitationFilter:
    """Invented citations taken out of a streamed answer, so that one is never shown: the
    shared ``CitationStream`` decides when prose is safe to show, and each decided run has
    its groups rewritten with their valid numbers (or removed, with the space before them).
    Code passes untouched; quoted source text does not pass through it at all
    (``before_quote``)."""

    def __init__(self, sources: int) -> None:
        self.sources = sources
        self.removed_numbers: list[int] = []
        self._stream = CitationStream(self._rewrite)

    @property
    def removed(self) -> int:
        return len(self.removed_numbers)

    def feed(self, chunk: str) -> str:
        """The part of the text so far that is safe to show now."""
        return self._stream.feed(chunk)

    def before_quote(self) -> str:
        """Everything held back, decided: source text quoted verbatim comes next, and no
        citation goes on across it. The caller shows the quote as it is, after this."""
        return self._stream.interrupt()

    def finish(self) -> str:
        """Whatever was held back, decided now that the stream has ended."""
        return self._stream.finish()

    def _rewrite(self, text: str) -> str:
        def replace(match: re.Match[str]) -> str:
            shown = []
            for group in GROUP_RE.finditer(match["chain"]):
                kept, lost = _filter_group(group[0], self.sources)
                shown.append(kept)
                self.removed_numbers.extend(lost)
            chain = "".join(shown)
            return match["space"] + chain if chain else ""

        return CHAIN_RE.sub(replace, text)


def escape_markers(text: str) -> str:
    """Source text with its own citation-like markers (footnotes ``[3]``, ``[1, 2]``)
    backslash-escaped, as Markdown escapes them (``\\[3\\]``): a reader that copies one copies
    text, not a citation of source 3."""
    return GROUP_RE.sub(lambda m: "\\" + m[0][:-1] + "\\]", text)


def _sentences(prose: str) -> list[tuple[int, int]]:
    """Where each sentence of ``prose`` is, with the citations that follow its end mark;
    lines and list items are sentences of their own."""
    spans: list[tuple[int, int]] = []
    at = 0
    for line in prose.splitlines(keepends=True):
        marker = _LIST_MARKER.match(line)
        skip = marker.end() if marker else 0
        pieces = [
            (at + skip + match.start() + len(match[0]) - len(match[0].lstrip()),
             at + skip + match.end() - len(match[0]) + len(match[0].rstrip()))
            for match in _SENTENCE.finditer(line.rstrip("\r\n")[skip:])
            if match[0].strip()
        ]  # fmt: skip
        spans += _join_abbreviations(prose, pieces)
        at += len(line)
    return spans


def _join_abbreviations(prose: str, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Pieces glued back where the split fell after an abbreviation like "e.g."."""
    joined: list[tuple[int, int]] = []
    for start, end in pieces:
        if joined and _ABBREVIATION.search(prose[joined[-1][0] : joined[-1][1]]):
            joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    return joined


def _read(sentence: str, numbers: Collection[int]) -> AnswerSentence | None:
    cited = (n for group in parse_citations(sentence) for n in group)
    text = unescape_markdown(" ".join(_CITED.sub(" ", sentence).split()).translate(_UNMASK))
    plain = _SPACE_BEFORE_MARK.sub("", text)
    if not _WORD.search(plain):  # citation marks, a rule, a bullet alone
        return None
    return AnswerSentence(plain, tuple(dict.fromkeys(n for n in cited if n in numbers)))


def answer_sentences(answer: str, numbers: Collection[int]) -> list[AnswerSentence]:
    """Every sentence of ``answer`` (Markdown, as ``Answer.markdown`` holds it) with the
    ``numbers`` it cites (those of real sources). Brackets in code and escaped ones are
    masked first, so that they cite nothing; sentences are given as they show (masks and
    escapes undone). A code block is no sentence: it claims nothing."""
    return [sentence for sentence, _ in _located(answer, numbers)]


def written_sentence(answer: str, numbers: Collection[int], sentence: str) -> str | None:
    """The sentence of ``answer`` that ``answer_sentences`` reads as ``sentence``, as it is
    written there: its own spacing and escapes, its citations and the check's mark after
    them (a research's short answer quotes its parts' sentences so)."""
    for read, (start, end) in _located(answer, numbers):
        # The mark after the sentence before is read as this one's start: not its words.
        if read.text.removeprefix(CORRECTED).lstrip() == sentence:
            mark = answer[end : end + len(CORRECTED)] == CORRECTED
            return answer[start : end + len(CORRECTED) * mark].lstrip(CORRECTED).strip()
    return None


def recite(answer: str, numbers: Collection[int], changes: Mapping[str, str]) -> str:
    """``answer`` with the citations of some sentences replaced: ``changes`` maps a
    sentence, as ``answer_sentences`` reads it, to the citation text it shows instead
    (its own citation groups go; the new one takes the first one's place, or stands before
    its end mark when it cited nothing). Literal text is never touched."""
    prose = _prose(answer)
    edits: list[tuple[int, int, str]] = []
    for sentence, (start, end) in _located(answer, numbers):
        if sentence.text not in changes:
            continue
        groups = [(m.start(), m.end()) for m in CHAIN_RE.finditer(prose, start, end)]
        shown = " " + changes[sentence.text]
        if groups:
            edits.append((groups[0][0], groups[0][1], shown))
            edits += [(low, high, "") for low, high in groups[1:]]
        else:
            mark = _END_MARK.search(prose, start, end)
            at = mark.start() if mark else end
            edits.append((at, at, shown))
    for low, high, text in sorted(edits, reverse=True):
        answer = answer[:low] + text + answer[high:]
    return answer


def _prose(answer: str) -> str:
    """``answer`` with its literal text masked, every character where it was: brackets in
    code and escapes hidden, a fenced block blank lines."""
    return "".join(
        ("\n" * len(piece) if piece.startswith(_FENCES) else piece.translate(_MASK))
        if literal
        else piece
        for literal, piece in CodeScanner().feed(answer, final=True)
    )


def _located(answer: str, numbers: Collection[int]) -> list[tuple[AnswerSentence, tuple[int, int]]]:
    prose = _prose(answer)
    found = []
    for start, end in _sentences(prose):
        sentence = _read(prose[start:end], numbers)
        if sentence is not None:
            found.append((sentence, (start, end)))
    return found
