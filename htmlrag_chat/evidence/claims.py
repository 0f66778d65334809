"""Claims and their evidence: each sentence of a finished answer with the words that back it.

After the answer has streamed (so the first token never waits for it), every sentence is
read with the sources it cites (``reader.citations.answer_sentences``) and, in each of them,
the shortest passage (``html.passages``: a sentence, a table row with its header, a list
item with its lead-in) that best backs it is found (``evidence.matching``: terms and
numbers). A sentence no cited passage backs at ``THRESHOLD`` is unsupported; a number of it
that none of its cited sources holds is named.

Small readers often answer right and cite nothing. A sentence that cites nothing is matched
against every source the same way, and the passage found is attached as a quote marked
``added``: the checker's, never the model's, and never written into the answer's text as an
``[n]``. An answer is backed when every sentence is, whoever found the quote.

They also cite the wrong source: Qwen2.5-Coder-1.5B answers the demo question right from The
Verge and cites the Docker page. Such a sentence stays unsupported (its ``[n]`` is wrong),
and the other sources are searched the same way: a passage that backs it is attached as an
``added`` quote, so that the reader is shown where the sentence does come from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.declining import declines
from htmlrag_chat.evidence.matching import (
    NUMBER_MISS,
    Collection,
    Sentence,
    numbers,
    read_sentence,
    sentence_language,
)
from htmlrag_chat.html.passages import ASKING, Passage, passages
from htmlrag_chat.reader.citations import AnswerSentence, answer_sentences

THRESHOLD = 0.66  # calibrated on half of bench/data/claims.jsonl (docs/evidence.md)
# "Here is what the sources say:" introduces claims, a question asks one: neither makes one.
NO_CLAIM = (":", "\uff1a", *ASKING)
LOOP = 4  # one to LOOP_WORDS words said this many times in a row: the reader looped
LOOP_WORDS = 5
_WORDS = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Quote:
    """The passage of source ``source`` that best backs a sentence, and how well."""

    source: int
    text: str  # the passage, its table header or list lead-in first
    score: float
    backs: bool  # the score reaches the threshold, and the sentence's numbers are held
    added: bool = False  # found by the checker: the sentence cites nothing, or not this source


@dataclass(frozen=True)
class Claim:
    """One sentence of an answer and its evidence."""

    sentence: str
    cited: tuple[int, ...]  # the real sources the model cited, in order
    quotes: tuple[Quote, ...] = ()  # each cited source's best passage, and any added one
    support: float = 0.0  # the best quote's score
    supported: bool = True
    missing: tuple[str, ...] = ()  # numbers of the sentence in none of the sources searched
    # False: a lead-in ("The sources say:"), a question, or words that say nothing about
    # the world ("According to the sources."): there is nothing to back.
    checked: bool = True
    looped: bool = False  # it says the same words over and over: no source backs a loop
    # The sources the checker cites in place of ``cited`` (``evidence.correction``): those
    # cited do not back the sentence and this one does, or it cited nothing. Empty: as cited.
    corrected: tuple[int, ...] = ()
    judged: float | None = None  # the judge's probability that its sources state it, if asked

    @property
    def shown(self) -> tuple[int, ...]:
        """The sources the answer shows for it: the checker's correction, else the model's."""
        return self.corrected or self.cited

    @property
    def backing(self) -> tuple[Quote, ...]:
        """The quotes that back it, the ones worth showing; none when it is unsupported."""
        return tuple(quote for quote in self.quotes if quote.backs) if self.supported else ()

    @property
    def elsewhere(self) -> tuple[Quote, ...]:
        """For a sentence that its cited sources do not back: the passage of a source it
        does not cite that does, found by the checker."""
        if self.supported or not self.cited:
            return ()
        return tuple(quote for quote in self.quotes if quote.added and quote.backs)


def cited_numbers(claims: Sequence[Claim]) -> set[int]:
    """The sources an answer cites, as it shows them (corrected citations included)."""
    return {number for claim in claims for number in claim.shown}


def found_numbers(claims: Sequence[Claim]) -> set[int]:
    """The sources an answer does not cite that the check found backing one of its
    sentences (one that cites nothing, or the wrong source): no ``[n]`` points at them."""
    found = {
        quote.source
        for claim in claims
        for quote in (*claim.backing, *claim.elsewhere)
        if quote.added
    }
    return found - cited_numbers(claims)


@dataclass(frozen=True)
class _Scored:
    passage: int  # index in the collection
    score: float  # the terms' score, less where a number is missing


@dataclass
class _Sentence:
    said: AnswerSentence
    language: str
    eligible: list[int]  # passages it may be backed by
    scored: dict[int, _Scored] = field(default_factory=dict)


def check_answer(
    question: str,
    answer: str,
    sources: Sequence[Source],
    threshold: float = THRESHOLD,
    band: tuple[float, float] | None = None,
) -> list[Claim]:
    """Every sentence of ``answer`` (Markdown) with its quotes from ``sources``, judged
    by their terms and numbers.

    ``band``: the scores a judge will read again (``evidence.judging``). The checker's own
    quotes (for a sentence that cites nothing, or from a source it does not cite) are then
    kept from the band's low end, backing or not, and other sources are searched for every
    cited sentence scored below its high end: the judge may yet say no to its citation."""
    said = answer_sentences(answer, {source.number for source in sources})
    if not said:
        return []
    found = [p for source in sources for p in passages(source.number, source.html)]
    collection = Collection(found, question, {s.number: s.title for s in sources})
    held = _numbers_by_source(sources, collection)
    work = []
    for sentence in said:
        allowed = set(sentence.sources) or {source.number for source in sources}
        eligible = [i for i, p in enumerate(found) if p.source in allowed and not p.asks]
        language = sentence_language(sentence.text, collection, eligible)
        work.append(_Sentence(sentence, language, eligible))
    for item in work:
        _score_terms(item, collection)
    low, high = band or (threshold, threshold)
    claims = [_claim(item, collection, held, threshold, low) for item in work]
    return _searched_elsewhere(claims, work, collection, held, threshold, (low, high))


def _searched_elsewhere(
    claims: list[Claim],
    work: list[_Sentence],
    collection: Collection,
    held: dict[int, set[str]],
    threshold: float,
    band: tuple[float, float],
) -> list[Claim]:
    """The claims, each sentence that its cited sources do not back given the passage of
    another source that does, if one does (an ``added`` quote; the sentence stays
    unsupported). Searched only for those sentences (and, with a judge to come, those
    scored below ``band``'s high end): most answers pay nothing for it."""
    astray = [
        (index, item)
        for index, (claim, item) in enumerate(zip(claims, work, strict=True))
        if claim.cited
        and claim.checked
        and not claim.looped
        and (not claim.supported or claim.support < band[1])
    ]
    others = [
        _Sentence(
            item.said,
            item.language,
            [
                i
                for i, passage in enumerate(collection.passages)
                if passage.source not in item.said.sources and not passage.asks
            ],
        )
        for _, item in astray
    ]
    for other in others:
        _score_terms(other, collection)
    found = list(claims)
    for (index, _), item in zip(astray, others, strict=True):
        quote = _other_source(item, collection, held, threshold, band[0])
        if quote is not None:
            found[index] = replace(claims[index], quotes=(*claims[index].quotes, quote))
    return found


def _other_source(
    item: _Sentence,
    collection: Collection,
    held: dict[int, set[str]],
    threshold: float,
    low: float,
) -> Quote | None:
    """The best passage among ``item``'s, in a source that holds all its numbers, when it
    scores ``low`` or more (it backs the sentence from ``threshold``); None otherwise."""
    numbers = read_sentence(item.said.text, collection, item.language).numbers
    scored = [
        scored
        for scored in item.scored.values()
        if numbers <= held[collection.passages[scored.passage].source]
    ]
    if not scored:
        return None
    quote = _quote(_best(scored, collection), collection, threshold, added=True)
    return quote if quote.score >= low else None


def _numbers_by_source(sources: Sequence[Source], collection: Collection) -> dict[int, set[str]]:
    held: dict[int, set[str]] = {source.number: set(numbers(source.title)) for source in sources}
    for passage, found in zip(collection.passages, collection.numbers, strict=True):
        held[passage.source] |= found
    return held


def _score_terms(item: _Sentence, collection: Collection) -> None:
    readings: dict[str, Sentence] = {}
    for index in item.eligible:
        language = collection.languages[index]
        if language not in readings:
            readings[language] = read_sentence(item.said.text, collection, language)
        reading = readings[language]
        terms = reading.score(collection.terms[index], collection.topics[index])
        if reading.numbers - collection.numbers[index]:
            terms *= NUMBER_MISS
        item.scored[index] = _Scored(index, terms)


def _best(scored: Sequence[_Scored], collection: Collection) -> _Scored:
    """The best score; of two as good, the shorter passage."""
    return max(scored, key=lambda s: (round(s.score, 3), -len(collection.passages[s.passage].text)))


def _claim(
    item: _Sentence,
    collection: Collection,
    held: dict[int, set[str]],
    threshold: float,
    low: float,
) -> Claim:
    said = item.said
    reading = read_sentence(said.text, collection, item.language)
    if said.text.endswith(NO_CLAIM) or not reading.says_anything:
        return Claim(said.text, said.sources, checked=False)
    if not said.sources and declines(said.text):  # "The sources do not say": no claim
        return Claim(said.text, (), checked=False)
    if loops(said.text):
        return Claim(said.text, said.sources, supported=False, looped=True)
    searched = set(said.sources) or set(held)
    missing = tuple(sorted(reading.numbers - set().union(*(held[n] for n in searched))))
    if said.sources:
        by_source: dict[int, list[_Scored]] = {}
        for scored in item.scored.values():
            by_source.setdefault(collection.passages[scored.passage].source, []).append(scored)
        quotes = tuple(
            _quote(_best(by_source[number], collection), collection, threshold, not missing)
            for number in said.sources
            if number in by_source
        )
        support = max((quote.score for quote in quotes), default=0.0)
        backed = support >= threshold and not missing
        return Claim(said.text, said.sources, quotes, support, backed, missing)
    if not item.scored:
        return Claim(said.text, (), supported=False, missing=missing)
    best = _quote(_best(list(item.scored.values()), collection), collection, threshold, added=True)
    if best.score >= threshold and not missing:
        return Claim(said.text, (), (best,), best.score, True)
    kept = (best,) if best.score >= low and not missing else ()  # for a judge to read
    return Claim(said.text, (), kept, best.score, False, missing)


def loops(text: str) -> bool:
    """Whether ``text`` says the same one to ``LOOP_WORDS`` words ``LOOP`` times in a row
    ("the team of the team of the team of ..."): a small reader stuck in a loop. Its first
    words may copy a source; what follows is no claim a passage can back."""
    words = _WORDS.findall(text.casefold())
    for size in range(1, LOOP_WORDS + 1):
        for start in range(len(words) - LOOP * size + 1):
            said = words[start : start + size]
            if all(
                words[start + k * size : start + (k + 1) * size] == said for k in range(1, LOOP)
            ):
                return True
    return False


def _quote(
    scored: _Scored,
    collection: Collection,
    threshold: float,
    numbers_held: bool = True,
    added: bool = False,
) -> Quote:
    """The passage as a quote; it backs its sentence at the threshold, unless the sentence
    has a number none of its sources holds (then no passage backs it, however close)."""
    passage: Passage = collection.passages[scored.passage]
    score = round(scored.score, 3)
    return Quote(passage.source, passage.quote, score, numbers_held and score >= threshold, added)
