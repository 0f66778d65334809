"""How well a passage backs a sentence, from what runs on a CPU with no reader.

Three kinds of evidence, each for a failure the others miss:

- **Terms** (``coverage``): the share of the sentence's terms found in the passage, each
  weighted by its rarity among the answer's passages (BM25's idf), in the passage's
  language (``scoring.analysis``: Snowball stems, compound halves, CJK bigrams). Words the
  question already has weigh a third: a passage that only repeats the question ("Which
  framework does FaceTime use?") backs nothing, the one with the answer's own words does.
  Names (capitalized words after the first) weigh double.
- **Numbers** (``numbers``): a changed number keeps every other word ("iOS 13 beta 7" for
  "beta 3"), so it must be found as written: digit runs, thousands separators dropped
  ("1,024" is "1024"), leading zeros dropped ("09" is "9"), none inside a code like
  "U7PMa4oNGN". A passage without one of the
  sentence's numbers backs it at half its score; a number in none of the cited sources is
  named and fails the sentence (``claims``). Numbers the question gave are its premise.
- **Meaning** (the embedding model, when installed): the cosine of the sentence and the
  passage, for a paraphrase that shares few words. all-MiniLM-L6-v2 reads English only, so
  it gives an opinion only on an English sentence and passage.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from htmlrag_chat.evidence.passages import Passage
from htmlrag_chat.html.text import CJK
from htmlrag_chat.scoring.analysis import analyze, tokens
from htmlrag_chat.scoring.language import languages, script_language

QUESTION_WEIGHT = 1 / 3  # a term the question has: it says what was asked, not the answer
NAME_WEIGHT = 2.0  # a capitalized word after a sentence's first
NUMBER_MISS = 0.5  # a passage lacking one of the sentence's numbers backs it this much less
# The embedding's cosine mapped onto [0, 1]: unrelated English sentences score about 0.1 with
# all-MiniLM-L6-v2, a close paraphrase 0.7 and more.
COSINE_FLOOR, COSINE_CEILING = 0.2, 0.8
MEANING_WEIGHT = 0.4  # the meaning's share of the score, where the model gives one

_THOUSANDS = re.compile(r"\d{1,3}(?:[.,\u00a0\u202f]\d{3})+(?![.,]?\d)")
# A digit run inside a word of letters and digits ("U7PMa4oNGN", a link's code) is no number;
# one at a word's end or start is ("iOS13", "4K").
_LETTER = rf"[^\W\d_{CJK.pattern[1:-1]}]"  # CJK text writes numbers between its words
_DIGITS = re.compile(rf"(?<!\d)(?:(?<!{_LETTER})\d+|\d+(?!{_LETTER}))(?!\d)")
_NAME = re.compile(r"(?<=\S)\s+[\"'“„(]?([^\W\d_a-z][^\W_]*)")


def numbers(text: str) -> frozenset[str]:
    """The numbers of a text as digit runs, thousands separators and leading zeros dropped."""
    grouped = {re.sub(r"\D", "", match[0]) for match in _THOUSANDS.finditer(text)}
    rest = _THOUSANDS.sub(" ", text)
    found = grouped | set(_DIGITS.findall(rest))
    return frozenset(number.lstrip("0") or "0" for number in found)


class Embedder(Protocol):
    """What the check needs of an embedding model (``scoring.embed.EmbeddingScorer``):
    unit-length vectors of texts, one row each."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass
class Collection:
    """The passages of an answer's sources, analysed once for all its sentences."""

    passages: list[Passage]
    question: str = ""
    terms: list[frozenset[str]] = field(init=False)
    numbers: list[frozenset[str]] = field(init=False)
    languages: list[str] = field(init=False)
    idf: dict[str, float] = field(init=False)
    _vocabulary: set[str] = field(init=False)
    _question: dict[str, frozenset[str]] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        texts = [passage.matched for passage in self.passages]
        split = [tokens(text) for text in texts]
        judged = [
            script_language(text, words) for text, (words, _) in zip(texts, split, strict=True)
        ]
        found = languages(judged, [passage.source for passage in self.passages])
        common = Counter(filter(None, found)).most_common(1)
        self.languages = [language or (common[0][0] if common else "") for language in found]
        self._vocabulary = {word for words, _ in split for word in words}
        self.terms = [
            frozenset(analyze(text, language, self._vocabulary))
            for text, language in zip(texts, self.languages, strict=True)
        ]
        self.numbers = [numbers(text) for text in texts]
        df = Counter(term for terms in self.terms for term in terms)
        n = len(self.terms)
        self.idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in df.items()}
        self.unseen = math.log(1 + (n + 0.5) / 0.5)  # a term no passage has: the rarest

    def question_terms(self, language: str) -> frozenset[str]:
        if language not in self._question:
            self._question[language] = frozenset(analyze(self.question, language, self._vocabulary))
        return self._question[language]


@dataclass(frozen=True)
class Sentence:
    """A sentence's weighted terms in one language and its numbers beyond the question's."""

    weights: dict[str, float]
    numbers: frozenset[str]
    new_terms: int  # terms the question does not have

    @property
    def says_anything(self) -> bool:
        """Whether it has a word or number the question did not give: else it only repeats
        the question and there is nothing to back."""
        return bool(self.numbers or self.new_terms)

    def coverage(self, terms: frozenset[str]) -> float:
        total = sum(self.weights.values())
        if not total:
            return 0.0
        return sum(w for term, w in self.weights.items() if term in terms) / total


def read_sentence(text: str, collection: Collection, language: str) -> Sentence:
    """``text``'s terms in ``language`` (a passage's), weighted by rarity, question and name."""
    question = collection.question_terms(language)
    names = {
        term
        for match in _NAME.finditer(text)
        for term in analyze(match[1], language, collection._vocabulary)
    }
    weights = {}
    for term in analyze(text, language, collection._vocabulary):
        weight = collection.idf.get(term, collection.unseen)
        if term in question:
            weight *= QUESTION_WEIGHT
        elif term in names:
            weight *= NAME_WEIGHT
        weights[term] = weight
    new = sum(term not in question for term in weights)
    return Sentence(weights, numbers(text) - numbers(collection.question), new)


def sentence_language(text: str, collection: Collection) -> str:
    words, _ = tokens(text)
    return script_language(text, words) or script_language(
        collection.question, tokens(collection.question)[0]
    )


def meaning(cosine: float) -> float:
    """A cosine on the [0, 1] scale of the term coverage."""
    return min(max((cosine - COSINE_FLOOR) / (COSINE_CEILING - COSINE_FLOOR), 0.0), 1.0)
