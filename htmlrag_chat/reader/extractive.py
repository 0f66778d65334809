"""The extractive reader: no LLM, the sentences of the pruned sources that best match the
question, each quoted with its citation.

It is what ``--reader auto`` falls back to when no model is installed, so every answer it
gives starts with a line saying what it is: never an extractive answer dressed as an LLM's.
A sentence is yielded as ``Quoted``: shown verbatim but for the page's own footnote markers
(``[3]``, ``[22]``, ``[a]``, ``[citation needed]``), which are left out, since a reader would
take them for citations of sources that may not exist; only the ``[n]`` after it cites, and
it cites the sentence's source.

Matching is on content words (stop words never pick a sentence: "Which iPhones get it?" must
not quote "Which is the best fertilizer for lemon trees?"), a shared 5-letter prefix being
one word ("iPhones"/"iPhone"), as the citation check counts them. Only the sources that
concern the conversation are quoted from: those that match its questions (a follow-up's
and the ones before it) at least half as well as the best one, so a follow-up answers from
the page the conversation is about, or says that the sources do not hold the answer.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from htmlrag_chat.html.text import count_words
from htmlrag_chat.lexical import bm25_scores, terms
from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.citations import PREFIX, STOPWORDS
from htmlrag_chat.reader.literal import Quoted

HEADER = "Extractive answer (sentences quoted from the sources; no language model):"
NOTHING = "The sources do not say: no sentence of them matches the question."
MIN_WORDS, MAX_WORDS = 4, 80
CONCERNED = 0.5  # a source is quoted from when it matches the conversation this well vs the best
_FOOTNOTE = re.compile(
    r"\s*\[(?:\d+(?:\s*[,\-\u2013]\s*\d+)*|[a-z]{1,2}|(?:note|nb|n)\s*\d+|[a-z ]{1,20} needed)\]",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s\da-z])|(?<=[\u3002\uff01\uff1f])")


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
        picks = best_sentences(question, sources, self.max_sentences, " ".join(asked))
        if not picks:
            yield NOTHING
        for number, sentence in picks:
            yield "- "
            yield Quoted(_FOOTNOTE.sub("", sentence))
            yield f" [{number}]\n"


def best_sentences(
    question: str, sources: Sequence[Source], limit: int, earlier: str = ""
) -> list[tuple[int, str]]:
    """Up to ``limit`` (source number, sentence) pairs from the sources that concern the
    conversation (``earlier``: its questions before this one), best BM25 match on content
    words first, each sentence once; a sentence with no content word of the question (or,
    for one of stop words only, like "why?", of the conversation) is never picked."""
    query = stems(question) or stems(earlier)
    candidates = [
        (source.number, sentence)
        for source in concerned(f"{earlier} {question}", sources)
        for sentence in split_sentences(source.text)
        if MIN_WORDS <= count_words(sentence) <= MAX_WORDS
    ]
    scores = bm25_scores(" ".join(query), [" ".join(stems(s, False)) for _, s in candidates])
    ranked = sorted(zip(scores, range(len(candidates)), strict=True), reverse=True)
    picks: list[tuple[int, str]] = []
    seen: set[str] = set()
    for score, index in ranked:
        number, sentence = candidates[index]
        if score <= 0 or len(picks) == limit:
            break
        if sentence.casefold() not in seen:
            seen.add(sentence.casefold())
            picks.append((number, sentence))
    return picks


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


def stems(text: str, content_only: bool = True) -> list[str]:
    """BM25 terms cut to ``PREFIX`` letters (``iphones`` and ``iphone`` are one), stop words
    left out when ``content_only``."""
    return [term[:PREFIX] for term in terms(text) if not (content_only and term in STOPWORDS)]


def split_sentences(text: str) -> list[str]:
    """Sentences of a page's visible text: one block per line, sentence ends inside."""
    return [
        " ".join(piece.split())
        for line in text.splitlines()
        for piece in _SENTENCE_END.split(line)
        if piece.strip()
    ]
