"""The extractive reader: no LLM, the sentences of the pruned sources that best match the
question, each quoted with its citation.

It is what ``--reader auto`` falls back to when no model is installed, so every answer it
gives starts with a line saying what it is: never an extractive answer dressed as an LLM's.
A sentence is yielded as ``Quoted``: shown verbatim, its own footnote markers (``[3]``) never
taken for citations; only the ``[n]`` after it cites, and it cites the sentence's source.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from htmlrag_chat.html.text import count_words
from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.markup import Quoted
from htmlrag_chat.scoring.bm25 import bm25_scores

HEADER = "Extractive answer (sentences quoted from the sources; no language model):"
NOTHING = "No sentence of the sources matches the question."
MIN_WORDS, MAX_WORDS = 4, 80
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s\da-z])|(?<=[\u3002\uff01\uff1f])")


@dataclass
class ExtractiveReader:
    max_sentences: int = 3
    kind: str = "extractive"
    chat: ChatModel | None = None  # no model to rewrite queries or judge the sources

    @property
    def name(self) -> str:
        return "extractive"

    async def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]:
        yield HEADER + "\n\n"
        picks = best_sentences(question, sources, self.max_sentences)
        if not picks:
            yield NOTHING
        for number, sentence in picks:
            yield "- "
            yield Quoted(sentence)
            yield f" [{number}]\n"


def best_sentences(question: str, sources: Sequence[Source], limit: int) -> list[tuple[int, str]]:
    """Up to ``limit`` (source number, sentence) pairs, best BM25 match first, each sentence
    once; sentences with no term of the question are never picked."""
    candidates = [
        (source.number, sentence)
        for source in sources
        for sentence in split_sentences(source.text)
        if MIN_WORDS <= count_words(sentence) <= MAX_WORDS
    ]
    scores = bm25_scores(question, [sentence for _, sentence in candidates])
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


def split_sentences(text: str) -> list[str]:
    """Sentences of a page's visible text: one block per line, sentence ends inside."""
    return [
        " ".join(piece.split())
        for line in text.splitlines()
        for piece in _SENTENCE_END.split(line)
        if piece.strip()
    ]
