"""Citations: keep invented ones off the screen, and check the real ones against their sources.

A reader LLM cites numbered sources as ``[1]``, ``[1, 3]`` or ``[2-4]``, and it can go wrong in
two ways: it cites a number no source has, or it cites a real source for a claim that source
does not make. The first is fixed while the answer streams: ``CitationFilter`` holds back only
what could still become a citation, so plain text reaches the terminal at once. The second is
flagged afterwards by ``check_citations``, a lexical overlap test that needs no model and so can
run on every answer. What a citation is, and when streamed prose is decided, is
``citation_syntax``'s, shared with the chat app's citation links.

Only the answer's own prose cites. Brackets in code (``arr[0]``, a fenced ``x[1]``), text a
reader quotes from a source (``Quoted``: its ``[3]`` is the page's footnote), and
backslash-escaped brackets (``\\[3\\]``, how source text reaches an LLM, ``escape_markers``)
are never read as citations, and never rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.html.text import CJK
from htmlrag_chat.reader import Source
from htmlrag_chat.reader.citation_syntax import (
    CHAIN_RE,
    GROUP,
    GROUP_RE,
    ITEM_RE,
    CitationStream,
    expand,
    span,
    unhide,
)
from htmlrag_chat.reader.literal import CodeScanner, unescape_markdown

# A sentence that paraphrases its source keeps at least half of its content words (names,
# numbers, key nouns); an invented claim shares few of them with the source it cites.
SUPPORT_THRESHOLD = 0.5

# One sentence of a line: text up to its end mark (a CJK one needs no space after it), with
# the citations that follow that mark.
_SENTENCE = re.compile(rf".+?(?:(?:[.!?]+(?=\s|\[|\Z)|[\u3002\uff01\uff1f]+)(?: *{GROUP})*|\Z)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#+)\s+")
# "e.g.", "z. B.", "bzw.": a period that ends a word, not a sentence.
_ABBREVIATION = re.compile(r"(?:\b[^\W\d_]|\b(?:bzw|ca|vs|dr|mr|mrs|ms|nr))\.\Z", re.IGNORECASE)
_SPACE_BEFORE_MARK = re.compile(r"\s+(?=[.,;:!?])")
# Brackets of literal text (code, escapes) while sentences are read: private-use stand-ins.
_MASK = str.maketrans("[]", "\ue000\ue001")
_UNMASK = str.maketrans("\ue000\ue001", "[]")

_CJK_RUN = re.compile(f"(?:{CJK.pattern})+")
_WORD = re.compile(r"[^\W_]+")
# Shared leading letters that count as one word: "released"/"release", "Lizenz"/"Lizenzen".
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
class Citation:
    """One cited sentence and how well its best cited source backs it."""

    sentence: str  # without its citation marks, whitespace-normalized
    sources: tuple[int, ...]  # the valid cited numbers, in order, without duplicates
    support: float  # best share of the sentence's content terms found in a cited source
    supported: bool


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


def _terms(text: str) -> frozenset[str]:
    """Content terms: casefolded words without stopwords and single letters, and character
    bigrams of CJK runs, since those scripts do not separate words with spaces."""
    text = text.casefold()
    found = {run[i : i + 2] for run in _CJK_RUN.findall(text) for i in range(max(len(run) - 1, 1))}
    found.update(
        word
        for word in _WORD.findall(_CJK_RUN.sub(" ", text))
        if (len(word) > 1 or word.isdigit()) and word not in STOPWORDS
    )
    return frozenset(found)


@dataclass(frozen=True)
class _SourceTerms:
    terms: frozenset[str]
    prefixes: frozenset[str]

    @classmethod
    def of(cls, text: str) -> _SourceTerms:
        terms = _terms(text)
        return cls(terms, frozenset(term[:PREFIX] for term in terms if len(term) >= PREFIX))

    def overlap(self, sentence_terms: frozenset[str]) -> float:
        """The share of the sentence's terms found here, equal or with the same long prefix."""
        if not sentence_terms:
            return 1.0  # nothing to contradict
        hits = sum(
            term in self.terms or (len(term) >= PREFIX and term[:PREFIX] in self.prefixes)
            for term in sentence_terms
        )
        return hits / len(sentence_terms)


def support(sentence: str, text: str) -> float:
    """The share of ``sentence``'s content terms found in ``text``, as ``check_citations``
    measures it for each cited sentence against its best source."""
    return round(_SourceTerms.of(text).overlap(_terms(sentence)), 3)


def _sentences(answer: str) -> list[str]:
    """Sentences, each with the citations that follow its end mark; lines and list items are
    sentences of their own."""
    sentences: list[str] = []
    for line in answer.splitlines():
        pieces = (match[0].strip() for match in _SENTENCE.finditer(_LIST_MARKER.sub("", line)))
        sentences += _join_abbreviations([piece for piece in pieces if piece])
    return sentences


def _join_abbreviations(pieces: list[str]) -> list[str]:
    """Pieces glued back where the split fell after an abbreviation like "e.g."."""
    joined: list[str] = []
    for piece in pieces:
        if joined and _ABBREVIATION.search(joined[-1]):
            joined[-1] += " " + piece
        else:
            joined.append(piece)
    return joined


def _judge(sentence: str, index: dict[int, _SourceTerms], threshold: float) -> Citation | None:
    numbers = (n for group in parse_citations(sentence) for n in group)
    cited = tuple(dict.fromkeys(n for n in numbers if n in index))
    if not cited:
        return None
    text = unescape_markdown(" ".join(GROUP_RE.sub(" ", sentence).split()).translate(_UNMASK))
    plain = _SPACE_BEFORE_MARK.sub("", text)
    terms = _terms(plain)
    support = round(max(index[n].overlap(terms) for n in cited), 3)
    return Citation(plain, cited, support, support >= threshold)


def check_citations(
    answer: str, sources: Sequence[Source], threshold: float = SUPPORT_THRESHOLD
) -> list[Citation]:
    """Every cited sentence of ``answer`` (Markdown, as ``Answer.markdown`` holds it) with
    its support by the best of its valid sources; sentences without a valid citation are
    not judged. Brackets in code and escaped ones are masked first, so that they cite
    nothing; sentences are given as they show (masks and escapes undone)."""
    index = {source.number: _SourceTerms.of(source.text) for source in sources}
    prose = "".join(
        piece.translate(_MASK) if literal else piece
        for literal, piece in CodeScanner().feed(answer, final=True)
    )
    judged = (_judge(sentence, index, threshold) for sentence in _sentences(prose))
    return [citation for citation in judged if citation is not None]


def _shorten(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def cites_any(citations: Sequence[Citation]) -> bool:
    """Whether an answer cites one of its sources at all: one that cites none may come from
    the model's memory rather than the sources (``"cited": false``, and a flag line)."""
    return any(citation.sources for citation in citations)


def flag_lines(citations: Sequence[Citation]) -> list[str]:
    """One line per unsupported citation, for the notice printed under the answer."""
    return [
        f'unsupported: "{_shorten(c.sentence)}" cites [{", ".join(map(str, c.sources))}]'
        f" (overlap {c.support:.2f})"
        for c in citations
        if not c.supported
    ]
