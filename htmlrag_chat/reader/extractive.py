"""The extractive reader: no LLM, the passages of the pruned sources that best match the
question, each quoted with its citation.

It is what ``--reader auto`` falls back to when no model is installed, so every answer it
gives starts with a line saying what it is: never an extractive answer dressed as an LLM's.

It reads a source as the evidence check does (``html.passages``): sentences, table rows
under their header row, list items after their lead-in, definitions after their term. HtmlRAG
keeps tables and lists so that their structure survives pruning; a reader of sentences alone
found "courgettes | 12.4 kg | 9 August" in no sentence. A row is quoted readably, each cell
after its header cell, the table's caption or heading after it (``courgettes, Weight:
12.4 kg, Date: 9 August (Harvest)``); an item or a definition with its lead-in or term.
Every word shown is the source's; only the punctuation that joins them is the reader's.

A passage is yielded as ``Quoted``: shown verbatim but for the page's own footnote markers
(``[3]``, ``[22]``, ``[a]``, ``[citation needed]``), which are left out, since a reader would
take them for citations of sources that may not exist; only the ``[n]`` after it cites, and
it cites the passage's source.

Matching is on content words (stop words never pick a passage: "Which iPhones get it?" must
not quote "Which is the best fertilizer for lemon trees?"), a shared 5-letter prefix being
one word ("iPhones"/"iPhone"), as the citation check counts them; a question that asks how
much, when or who (``reader.asking``) prefers a passage that holds a number or a name the
question does not. Only the sources that concern the conversation are quoted from: those
that match its questions (a follow-up's and the ones before it) at least half as well as
the best one, so a follow-up answers from the page the conversation is about, or says that
the sources do not hold the answer.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from htmlrag_chat.html.passages import ROW, SENTENCE, Passage, passages, sentences
from htmlrag_chat.html.text import count_words
from htmlrag_chat.lexical import bm25_scores, terms
from htmlrag_chat.lexical.analysis import FUNCTION_WORDS, MIN_PART, split_compound
from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.asking import NAME, NUMBER, asked_for
from htmlrag_chat.reader.citations import PREFIX, STOPWORDS
from htmlrag_chat.reader.literal import Quoted

HEADER = "Extractive answer (sentences quoted from the sources; no language model):"
NOTHING = "The sources do not say: no sentence of them matches the question."
MIN_WORDS, MAX_WORDS = 4, 80  # a sentence's words; a row, item or definition needs no minimum
CONCERNED = 0.5  # a source is quoted from when it matches the conversation this well vs the best
ANSWERS = 2.0  # a passage holding what the question asks for (a number, a name) scores this
MAX_CELLS = 4  # cells of a row quoted: its first, those the question names, the answer
MAX_CONTEXT = 100  # characters of a lead-in or term quoted before its item or definition
_FOOTNOTE = re.compile(
    r"\s*\[(?:\d+(?:\s*[,\-\u2013]\s*\d+)*|[a-z]{1,2}|(?:note|nb|n)\s*\d+|[a-z ]{1,20} needed)\]",
    re.IGNORECASE,
)
_ENDS = (".", "!", "?", "\u3002", "\uff01", "\uff1f")
_CLOSING = "\"'”»)"
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*")
_WORDS = re.compile(r"[^\W\d_][^\W_]+")
# Function words of every language the lexical tables know, on top of the citation check's:
# "de", "la", "cuántos" must not pick a Spanish passage.
_FUNCTION = STOPWORDS | FUNCTION_WORDS


@dataclass
class ExtractiveReader:
    max_sentences: int = 3
    kind: str = "extractive"
    label: str = "extractive (no LLM)"
    chat: ChatModel | None = None  # no model to rewrite queries or judge the sources

    @property
    def name(self) -> str:
        return "extractive"

    async def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]:
        yield HEADER + "\n\n"
        asked = [turn.question for turn in history]
        picks = best_passages(question, sources, self.max_sentences, " ".join(asked))
        if not picks:
            yield NOTHING
        for passage in picks:
            yield "- "
            yield Quoted(readable(passage, question))
            yield f" [{passage.source}]\n"


def best_passages(
    question: str, sources: Sequence[Source], limit: int, earlier: str = ""
) -> list[Passage]:
    """Up to ``limit`` passages of the sources that concern the conversation (``earlier``:
    its questions before this one), best BM25 match on content words first (with its
    context, label and all), those that hold what the question asks for weighted by
    ``ANSWERS``, each text once; a passage with no content word of the question (or, for
    one of stop words only, like "why?", of the conversation) is never picked."""
    query = stems(question) or stems(earlier)
    candidates = [
        passage
        for source in concerned(f"{earlier} {question}", sources)
        for passage in readable_passages(source)
    ]
    asked = frozenset(t for t in terms(question) if len(t) >= MIN_PART and t not in _FUNCTION)
    texts = [" ".join(stems(p.matched, False) + asked_tails(p.matched, asked)) for p in candidates]
    scores = bm25_scores(" ".join(query), texts)
    wanted = asked_for(question)
    weighted = [
        score * ANSWERS if score > 0 and holds(passage.text, wanted, question) else score
        for score, passage in zip(scores, candidates, strict=True)
    ]
    ranked = sorted(zip(weighted, range(len(candidates)), strict=True), key=lambda p: -p[0])
    picks: list[Passage] = []
    seen: set[str] = set()
    for score, index in ranked:
        passage = candidates[index]
        if score <= 0 or len(picks) == limit:
            break
        if passage.quote.casefold() not in seen:
            seen.add(passage.quote.casefold())
            picks.append(passage)
    return picks


def readable_passages(source: Source) -> list[Passage]:
    """The passages of a source that can be quoted as an answer: sentences of
    ``MIN_WORDS`` to ``MAX_WORDS`` words; rows, items and definitions up to ``MAX_WORDS``
    (a longer one as its sentences), but a header row, which labels the others and states
    nothing itself."""
    found = passages(source.number, source.html)
    # A marked header row (``<th>`` cells) labels the rows under it; the first row of a
    # table without one is a row like the others.
    labels = {passage.context for passage in found if passage.kind == ROW and passage.header}
    quotable: list[Passage] = []
    for passage in found:
        words = count_words(passage.text)
        if passage.kind == SENTENCE:
            if MIN_WORDS <= words <= MAX_WORDS:
                quotable.append(passage)
        elif words > MAX_WORDS:
            quotable += [Passage(source.number, text) for text in sentences(passage.text)]
        elif not (passage.kind == ROW and passage.text in labels):
            quotable.append(passage)
    return quotable


def holds(text: str, wanted: str, question: str) -> bool:
    """Whether ``text`` holds what the question asks for: a number the question does not
    give, or a capitalised word it does not name."""
    if wanted == NUMBER:
        return bool(set(_NUMBER.findall(text)) - set(_NUMBER.findall(question)))
    if wanted == NAME:
        named = {word.casefold() for word in _WORDS.findall(question)}
        return any(
            word[0].isupper() and word.casefold() not in named for word in _WORDS.findall(text)
        )
    return False


def readable(passage: Passage, question: str) -> str:
    """The passage as quoted, without the page's footnote markers: a sentence as it is; a
    row's cells, each after its header cell (``Weight: 12.4 kg``), and its label; an item
    after its lead-in; a definition after its term."""
    if passage.kind == SENTENCE:
        text = passage.text
    elif passage.kind == ROW:
        text = _row(passage, question)
    elif passage.context:
        joiner = ": " if not passage.context.endswith((":", "\uff1a")) else " "
        text = _cut(passage.context) + joiner + passage.text
    else:
        text = passage.text
    if passage.label and passage.kind != SENTENCE:
        # After a text that ends a sentence the label would be read as one of its own,
        # which nothing but the label backs: it goes first then.
        ended = len(sentences(text)) > 1 or text.rstrip(_CLOSING).endswith(_ENDS)
        text = f"({passage.label}) {text}" if ended else f"{text} ({passage.label})"
    return " ".join(_FOOTNOTE.sub("", text).split())


def _row(passage: Passage, question: str) -> str:
    """A row's chosen cells, each after its header cell when the table has a header row
    that lines up with it (the first cell alone: it names the row; a cell that already
    starts with its header's words alone too); else its cells as they are."""
    cells, header = passage.cells, passage.header
    shown = _chosen_cells(passage, question)
    if len(header) != len(cells):
        return ", ".join(cells[i] for i in shown)
    parts = []
    for i in shown:
        if i == shown[0] or not header[i] or cells[i].startswith(header[i]):
            parts.append(cells[i])
        else:
            parts.append(f"{header[i]}: {cells[i]}")
    return ", ".join(parts)


def _chosen_cells(passage: Passage, question: str) -> list[int]:
    """The indices of the non-empty cells to quote: all of a row of at most ``MAX_CELLS``;
    of a wider one its first, those whose text or header share a word with the question,
    and the first that holds what the question asks for, ``MAX_CELLS`` at most."""
    filled = [i for i, cell in enumerate(passage.cells) if cell]
    if len(filled) <= MAX_CELLS:
        return filled
    asked = set(stems(question))
    header = passage.header if len(passage.header) == len(passage.cells) else ()
    wanted = asked_for(question)
    named = [
        i
        for i in filled[1:]
        if asked & set(stems(passage.cells[i] + " " + (header[i] if header else "")))
    ]
    answering = [i for i in filled[1:] if holds(passage.cells[i], wanted, question)][:1]
    chosen = sorted({filled[0], *named[: MAX_CELLS - 1 - len(answering)], *answering})
    return chosen if len(chosen) > 1 else filled[:MAX_CELLS]


def _cut(context: str) -> str:
    if len(context) <= MAX_CONTEXT:
        return context
    return context[:MAX_CONTEXT].rsplit(" ", 1)[0] + " …"


def concerned(topic: str, sources: Sequence[Source]) -> list[Source]:
    """The sources whose text matches ``topic`` at least ``CONCERNED`` times as well as the
    best one (all of them when none matches)."""
    scores = bm25_scores(" ".join(stems(topic)), [" ".join(stems(s.text, False)) for s in sources])
    best = max(scores, default=0.0)
    if best <= 0:
        return list(sources)
    return [
        source for source, score in zip(sources, scores, strict=True) if score >= best * CONCERNED
    ]


def asked_tails(text: str, asked: frozenset[str]) -> list[str]:
    """The question's words that compounds of ``text`` end in, as stems: "350 Gramm
    Weizenmehl" answers "Wie viel Mehl ...?" (``lexical.analysis.split_compound``)."""
    return [
        pair[1][:PREFIX] for word in terms(text) if (pair := split_compound(word, set(), asked))
    ]


def stems(text: str, content_only: bool = True) -> list[str]:
    """BM25 terms cut to ``PREFIX`` letters (``iphones`` and ``iphone`` are one), function
    words left out when ``content_only``."""
    return [term[:PREFIX] for term in terms(text) if not (content_only and term in _FUNCTION)]
