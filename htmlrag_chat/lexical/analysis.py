"""Lexical terms that match across a language's word forms: stems, compound parts, CJK bigrams.

BM25 on bare words misses "Altenheimen" for "Altenheime", "Fahrercheck" for "Fahrer", and
reads a Chinese or Japanese sentence as one character after another. Each text is analysed
in its own language (``lexical.language``):

- words are stemmed with the Snowball stemmer of the language (PyStemmer, C: about 2.5 us
  a word uncached, against 60 us for the pure-Python ``snowballstemmer``);
- in the compounding languages (German, Dutch, the Scandinavian ones) a long word whose two
  halves are both words of the pages or the question also yields the halves' stems, so
  "Fahrercheck" meets "Fahrer" and "Check"; the halves are looked up in the vocabulary of
  the texts at hand, not a dictionary, so nothing is shipped and a name is never cut into
  words that do not occur. A compound that ends in a word of the question is split whatever
  its head: the last part names what the thing is ("Weizenmehl" is a "Mehl", a
  "Naturschutzpreis" a "Preis"), and the head may be a word the pages never use alone;
- runs of CJK characters become overlapping character bigrams (a lone character stays
  itself): a two-character word such as 体罰 is one term, which single characters are not.

Numbers and words of a language without a stemmer stay as they are (casefolded).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from htmlrag_chat.html.text import CJK
from htmlrag_chat.lexical import bm25
from htmlrag_chat.lexical.language import function_words, languages, script_language

_CJK_CLASS = CJK.pattern[1:-1]
_TOKEN = re.compile(f"([{_CJK_CLASS}]+)|[^\\W_{_CJK_CLASS}]+")

STEMMERS = {
    "en": "english",
    "de": "german",
    "fr": "french",
    "es": "spanish",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
    "pl": "polish",
    "fi": "finnish",
    "hu": "hungarian",
    "sv": "swedish",
    "da": "danish",
    "no": "norwegian",
    "ar": "arabic",
    "el": "greek",
    "ru": "russian",
}
# The function words of every language stemmed: never a compound's tail for the question
# ("allgemeine" is no "eine"), never content to the extractive reader.
FUNCTION_WORDS = frozenset(word for language in STEMMERS for word in function_words(language))
COMPOUNDING = frozenset({"de", "nl", "sv", "da", "no"})
MIN_COMPOUND = 10  # letters of a word worth trying to split
MIN_PART = 4  # letters of each half


def tokens(text: str) -> tuple[list[str], list[str]]:
    """A text's casefolded words and its CJK runs."""
    words: list[str] = []
    runs: list[str] = []
    for match in _TOKEN.finditer(text.casefold()):
        (runs if match.group(1) else words).append(match.group(0))
    return words, runs


def bigrams(run: str) -> list[str]:
    """Overlapping character bigrams of a CJK run; a lone character is its own term."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


_PER_THREAD = threading.local()  # a PyStemmer object must not be shared between threads


def _stemmer(language: str) -> Any:
    stemmers = _PER_THREAD.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        import Stemmer  # PyStemmer; imported on the first scoring, not at start-up

        stemmers[language] = Stemmer.Stemmer(STEMMERS[language])
    return stemmers[language]


def stem(words: list[str], language: str) -> list[str]:
    """The Snowball stems of ``words`` in ``language``; the words themselves without one."""
    if language not in STEMMERS:
        return words
    return _stemmer(language).stemWords(words)


def split_compound(
    word: str, vocabulary: set[str], asked: frozenset[str] = frozenset()
) -> tuple[str, str] | None:
    """The two halves of a compound that are both in ``vocabulary`` (the head may end in
    a linking "s"), or whose tail is one of the ``asked`` words (the question's), the
    shortest head first; None for a word that is not one."""
    if len(word) < MIN_COMPOUND:
        return None
    for cut in range(MIN_PART, len(word) - MIN_PART + 1):
        head, tail = word[:cut], word[cut:]
        if tail in asked:
            return head, tail
        if tail in vocabulary and (
            head in vocabulary or (head.endswith("s") and head[:-1] in vocabulary)
        ):
            return (head.removesuffix("s") if head not in vocabulary else head), tail
    return None


def analyze(text: str, language: str, vocabulary: set[str] | None = None) -> list[str]:
    """A text's terms in ``language`` (see the module's docstring); compounds are split
    only with a ``vocabulary``."""
    words, runs = tokens(text)
    return _terms(words, runs, language, vocabulary)


def _terms(
    words: list[str],
    runs: list[str],
    language: str,
    vocabulary: set[str] | None,
    asked: frozenset[str] = frozenset(),
) -> list[str]:
    terms = stem(words, language)
    if vocabulary is not None and language in COMPOUNDING:
        pairs = [split_compound(word, vocabulary, asked) for word in words]
        terms = terms + stem([part for pair in pairs if pair for part in pair], language)
    for run in runs:
        terms.extend(bigrams(run))
    return terms


def analyze_all(
    query: str, texts: Sequence[str], pages: Sequence[int]
) -> tuple[list[str], list[list[str]]]:
    """The query's terms and each text's, each text in its own language: a text too short
    to tell takes its page's (``pages[i]`` is text i's page), a page that never tells the
    texts' most frequent language. The query is analysed in its own language and in every
    language of the texts, so that its words meet a block's whichever stemmer read them (a
    German question's "Willingen" is "willing" to German blocks, "willingen" to English)."""
    split = [tokens(text) for text in texts]
    judged = [script_language(text, words) for text, (words, _) in zip(texts, split, strict=True)]
    language = languages(judged, pages)
    query_words, query_runs = tokens(query)
    found = Counter(filter(None, language))
    if found:
        majority = found.most_common(1)[0][0]
        language = [lang or majority for lang in language]
    vocabulary = {word for words, _ in split for word in words} | set(query_words)
    asked = frozenset(
        word for word in query_words if len(word) >= MIN_PART and word not in FUNCTION_WORDS
    )
    documents = [
        _terms(words, runs, lang, vocabulary, asked)
        for (words, runs), lang in zip(split, language, strict=True)
    ]
    readings = {script_language(query, query_words), *found}
    query_terms = {
        term
        for lang in sorted(readings)
        for term in _terms(query_words, query_runs, lang, vocabulary)
    }
    return sorted(query_terms), documents


def lexical_scores(
    query: str, texts: list[str], pages: list[int], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """BM25 of each text on terms analysed in its language (``pages[i]``: text i's page,
    whose language a text too short to tell takes): the BM25 and fused block scorers'."""
    query_terms, documents = analyze_all(query, texts, pages)
    return bm25(query_terms, documents, k1, b)
