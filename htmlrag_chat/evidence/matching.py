"""How well a passage backs a sentence, from what runs on a CPU with no reader.

Two kinds of evidence, each for a failure the other misses:

- **Terms** (``Sentence.score``): the sentence's terms found in the passage, each weighted
  by its rarity among the answer's passages (BM25's idf) and read in the passage's language
  (``lexical.analysis``: Snowball stems, compound halves, CJK bigrams). Names weigh
  double, the question's words a third, function words and what readers say about their
  sources ("According to the information provided ...") nothing. A passage holding none of
  the sentence's own words, only the question's, backs it at half: a heading that repeats
  the question backs no answer to it. A sentence of three words or fewer that names nothing
  the question names ("The answer is: 3 inches.") claims them of its subject, so the share of the
  question's words in the passage, the two before it and its page title weighs in: "3
  inches" of a lemon pot does not answer for a hydrangea.
- **Numbers** (``numbers``): a changed number keeps every other word ("iOS 13 beta 7" for
  "beta 3"), so numbers must be found as written: digit runs, thousands separators dropped
  ("1,024" is "1024"), leading zeros dropped ("09" is "9"), none inside a code like
  "U7PMa4oNGN", small ones written as words ("twice") and ordinals in Roman capitals ("IV
  Pleno") as digits. A passage without one of the sentence's numbers backs it at half its
  score; a number in none of the cited sources is named and fails the sentence
  (``claims``). Numbers the question gave are its premise.

An embedding model's cosine was measured as a third (bench/claims.py until issue 51): it
changed none of the figures at the shipped threshold for 15 times the CPU time at the 95th
percentile, so no face ran it, and it was removed (docs/evidence.md).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from htmlrag_chat.html.passages import Passage
from htmlrag_chat.html.text import CJK
from htmlrag_chat.lexical.analysis import analyze, tokens
from htmlrag_chat.lexical.language import function_words, languages, script_language

QUESTION_WEIGHT = 1 / 3  # a word of the question: it says what was asked, not the answer
NAME_WEIGHT = 2.0  # a capitalized word after a sentence's first
ELLIPTICAL = 3  # words a sentence has at most, none the question's, to be read as its answer
SUBJECT_BEFORE = 2  # passages before one that name its subject (the line above a table)
TOPIC_SHARE = 0.6  # the question's subject's share of such a sentence's score
NUMBER_MISS = 0.5  # a passage lacking one of the sentence's numbers backs it this much less
OWN_MISS = 0.5  # likewise one with none of the sentence's own words, only the question's
# What readers say about their sources and the question, not about the world, and the words
# a question asks with.
META_WORDS = """according information provided source sources answer question article text
    context mentioned states stated based given passage laut quelle quellen antwort frage
    informationen angaben artikel selon réponse informations según fuente fuentes respuesta
    pregunta información artículo
    where when why which what who whom whose how many much wo wann warum welche welcher
    welches wie viel viele was wer où quand pourquoi quel quelle quels quelles comment
    combien qui dónde cuándo porqué cuál cuáles cómo cuánto cuántos cuántas quién qué"""

# Two to twelve in the languages most pages here are in, but for the words that are as
# often something else ("one", "ein", "un": articles; "elf", "once", "sept", "due", "sei");
# "twice" for "took the Fifth twice" against "more than 400 times".
NUMBER_WORDS = {
    word: str(value)
    for value, words in enumerate(
        (
            "two twice zwei deux dos dois dwa",
            "three thrice drei trois tres três tre trzy",
            "four vier quatre cuatro quatro quattro cztery",
            "five fünf cinq cinco cinque pięć",
            "six sechs seis sześć",
            "seven sieben siete sete sette siedem",
            "eight acht huit ocho oito osiem",
            "nine neun neuf nueve nove dziewięć",
            "ten zehn dix diez dez dieci dziesięć",
            "eleven onze undici",
            "twelve zwölf douze doce dodici",
        ),
        start=2,
    )
    for word in words.split()
}
_WORDS = re.compile(r"[^\W\d_]+")
_THOUSANDS = re.compile(r"\d{1,3}(?:[.,\u00a0\u202f]\d{3})+(?![.,]?\d)")
# A digit run inside a word of letters and digits ("U7PMa4oNGN", a link's code) is no number;
# one at a word's end or start is ("iOS13", "4K").
_LETTER = rf"[^\W\d_{CJK.pattern[1:-1]}]"  # CJK text writes numbers between its words
_DIGITS = re.compile(rf"(?<!\d)(?:(?<!{_LETTER})\d+|\d+(?!{_LETTER}))(?!\d)")
# An ordinal in capitals of I, V and X ("IV Pleno", "World War II", "Louis XIV"): a changed
# one changes the claim as a changed digit does. One letter alone is a word ("I") as often.
_ROMAN = re.compile(r"\b(?=[IVX]{2,}\b)X{0,3}(?:IX|IV|V?I{0,3})(?<=[IVX])\b")
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10}
_NAME = re.compile(r"(?<=\S)\s+[\"'“„(]?([^\W\d_a-z][^\W_]*)")


def numbers(text: str) -> frozenset[str]:
    """The numbers of a text as digit runs, thousands separators and leading zeros dropped;
    the small numbers written as words ("twice", "drei") as their digits."""
    grouped = {re.sub(r"\D", "", match[0]) for match in _THOUSANDS.finditer(text)}
    rest = _THOUSANDS.sub(" ", text)
    found = grouped | set(_DIGITS.findall(rest))
    found |= {
        NUMBER_WORDS[word] for word in _WORDS.findall(text.casefold()) if word in NUMBER_WORDS
    }
    found |= {str(_roman(match[0])) for match in _ROMAN.finditer(text)}
    return frozenset(number.lstrip("0") or "0" for number in found)


def _roman(numeral: str) -> int:
    values = [_ROMAN_VALUES[letter] for letter in numeral]
    return sum(-v if v < after else v for v, after in zip(values, [*values[1:], 0], strict=True))


@dataclass
class Collection:
    """The passages of an answer's sources, analysed once for all its sentences."""

    passages: list[Passage]
    question: str = ""
    titles: dict[int, str] = field(default_factory=dict)  # each source's page title
    terms: list[frozenset[str]] = field(init=False)
    # A passage's subject: its terms, the two passages' before it and its page title's.
    topics: list[frozenset[str]] = field(init=False)
    numbers: list[frozenset[str]] = field(init=False)
    languages: list[str] = field(init=False)
    idf: dict[str, float] = field(init=False)
    _vocabulary: set[str] = field(init=False)
    _question: dict[str, frozenset[str]] = field(init=False, default_factory=dict)
    _meta: dict[str, frozenset[str]] = field(init=False, default_factory=dict)

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
        title_terms = {
            (number, language): frozenset(analyze(title, language, self._vocabulary))
            for number, title in self.titles.items()
            for language in set(self.languages)
        }
        self.topics = []
        for index, (passage, language) in enumerate(
            zip(self.passages, self.languages, strict=True)
        ):
            topic = self.terms[index] | title_terms.get((passage.source, language), frozenset())
            for before in range(max(index - SUBJECT_BEFORE, 0), index):
                if self.passages[before].source == passage.source:
                    topic |= self.terms[before]
            self.topics.append(topic)
        self.numbers = [numbers(text) for text in texts]
        df = Counter(term for terms in self.terms for term in terms)
        n = len(self.terms)
        self.idf = {term: math.log(1 + (n - k + 0.5) / (k + 0.5)) for term, k in df.items()}
        # A term no passage has weighs as one that a single passage has: it may be invented,
        # or a word the reader chose ("hatte"), and in a small answer it would weigh most.
        self.unseen = math.log(1 + (n - 0.5) / 1.5)

    def question_terms(self, language: str) -> frozenset[str]:
        if language not in self._question:
            found = analyze(self.question, language, self._vocabulary)
            self._question[language] = frozenset(found) - self.meta_terms(language)
        return self._question[language]

    def meta_terms(self, language: str) -> frozenset[str]:
        """The terms that say nothing about the world: what readers say about their sources,
        and the language's function words."""
        if language not in self._meta:
            words = " ".join((META_WORDS, *function_words(language)))
            self._meta[language] = frozenset(analyze(words, language))
        return self._meta[language]


@dataclass(frozen=True)
class Sentence:
    """A sentence in one language: its weighted terms, its topic (the question's words) and
    its numbers beyond the question's."""

    terms: dict[str, float]  # its words, those of the question at QUESTION_WEIGHT
    topic: dict[str, float]  # the question's words
    numbers: frozenset[str]

    @property
    def says_anything(self) -> bool:
        return bool(self.terms)

    def score(self, terms: frozenset[str], topic: frozenset[str]) -> float:
        """How well a passage holds the sentence: the weighted share of its ``terms`` found
        there, at ``OWN_MISS`` when none of the sentence's own words is (only the
        question's). A sentence of at most ``ELLIPTICAL`` words, none of them the
        question's ("The answer is: 3 inches."), claims them of the question's subject: its
        score is ``coverage^(1 -
        TOPIC_SHARE) * subject^TOPIC_SHARE``, the subject being the share of the question's
        words in the passage's ``topic`` terms (its own, the two passages' before it, its
        page title's), so that "3 inches" of a lemon pot does not answer for a hydrangea. A
        sentence that says more is judged on its own words: true of a source, it is backed
        by it, whatever the question was."""
        score = _coverage(self.terms, terms)
        own = [term for term in self.terms if term not in self.topic]
        if len(own) <= ELLIPTICAL and len(own) == len(self.terms):
            subject = _coverage(self.topic, topic)
            score = score ** (1 - TOPIC_SHARE) * subject**TOPIC_SHARE
        if own and not any(term in terms for term in own):
            score *= OWN_MISS
        return score


def _coverage(weights: dict[str, float], terms: frozenset[str]) -> float:
    total = sum(weights.values())
    if not total:
        return 1.0  # nothing asked of the passage
    return sum(w for term, w in weights.items() if term in terms) / total


def read_sentence(text: str, collection: Collection, language: str) -> Sentence:
    """``text``'s terms in ``language`` (a passage's), weighted by rarity, names double and
    the question's words a third, function words and the words readers use about their
    sources left out. Its topic is the question's words, those it leaves out included: "The
    answer is: 3 inches" is about the hydrangea the question names."""
    question = collection.question_terms(language)
    meta = collection.meta_terms(language)
    names = {
        term
        for match in _NAME.finditer(text)
        for term in analyze(match[1], language, collection._vocabulary)
    }
    terms: dict[str, float] = {}
    for term in analyze(text, language, collection._vocabulary):
        if term in terms or term in meta:
            continue
        weight = collection.idf.get(term, collection.unseen)
        if term in question:
            weight *= QUESTION_WEIGHT
        elif term in names:
            weight *= NAME_WEIGHT
        terms[term] = weight
    # Each word of the question counts the same for the subject: those every passage has
    # (rare by no measure) are what the sources are about.
    topic = dict.fromkeys(question, 1.0)
    return Sentence(terms, topic, numbers(text) - numbers(collection.question))


def sentence_language(text: str, collection: Collection, allowed: Sequence[int]) -> str:
    """The sentence's language, else the question's, else that of most of the ``allowed``
    passages (a short sentence has too few function words to tell)."""
    for said in (text, collection.question):
        found = script_language(said, tokens(said)[0])
        if found:
            return found
    common = Counter(collection.languages[index] for index in allowed).most_common(1)
    return common[0][0] if common else ""
