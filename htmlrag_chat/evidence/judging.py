"""A judge for what words cannot decide: the reader asked whether a passage states a sentence.

The lexical check (``evidence.claims``) is right where its score is clear: a sentence whose
words, names and numbers a passage holds nearly all of is backed by it, and one that shares
few of them is not. In between it fails both ways: a true sentence in other words than its
source's is flagged, and an invented one made of a source's words ("Docker Engine is used
to map the user's face [4]", beside a Docker passage on the Engine) is shown as backed. No
NLI model ships with its weights on the registries this project can use, and the reader
itself is an instruction-tuned model that reads the passage well: asked "does the source
state this?", its probability of Yes against No, from one forward pass, decides.

Only the quotes whose score falls in ``BAND`` are judged (the best passage of the sentence's
cited sources, and the passage of another source the checker found for it), at most
``MAX_PAIRS`` an answer, the closest to the threshold first; after the last answer token,
never before the first. The judge's verdict replaces the threshold for those quotes: Yes
backs the sentence, No does not; a number none of its sources holds still fails it.
``Judge`` is whatever asks the model (``agent/`` lays the question out as a continuation of
the answer's own prompt, so the reader's kept state serves it); this module decides which
pairs to ask about and what the answers mean.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from htmlrag_chat.evidence.claims import Claim

# Lexical scores judged: below it no source word supports the sentence enough for a judge to
# find it; at or above it the words leave no doubt. Chosen on the labelled sets
# (bench/claims.py, docs/evidence.md).
BAND = (0.3, 0.9)
YES = 0.5  # the judge's probability of Yes at which a quote backs its sentence
MAX_PAIRS = 6  # judged pairs per answer, the most uncertain first: the judge's time is bounded


@dataclass(frozen=True)
class Pair:
    """A sentence of the answer and a passage of source ``source`` that may back it."""

    sentence: str
    passage: str
    source: int


class Judge(Protocol):
    """The probability that each pair's passage states its sentence (None: no verdict)."""

    async def __call__(self, pairs: Sequence[Pair]) -> list[float | None]: ...


def uncertain(
    claims: Sequence[Claim], limit: int = MAX_PAIRS, band: tuple[float, float] = BAND
) -> list[tuple[int, int]]:
    """(claim, quote) indices of the quotes to judge: of each checked sentence, its best
    cited quote and the best one the checker added, where their scores are in ``band``;
    the ``limit`` nearest the band's middle."""
    found: list[tuple[float, int, int]] = []
    middle = sum(band) / 2
    for index, claim in enumerate(claims):
        if not claim.checked or claim.looped or claim.missing:
            continue
        for group in (False, True):
            quotes = [(i, q) for i, q in enumerate(claim.quotes) if q.added is group]
            if not quotes:
                continue
            at, best = max(quotes, key=lambda pair: pair[1].score)
            if band[0] <= best.score < band[1]:
                found.append((abs(best.score - middle), index, at))
    found.sort()
    return [(index, at) for _, index, at in found[:limit]]


def pairs_of(claims: Sequence[Claim], asked: Sequence[tuple[int, int]]) -> list[Pair]:
    return [
        Pair(claims[index].sentence, claims[index].quotes[at].text, claims[index].quotes[at].source)
        for index, at in asked
    ]


def apply(
    claims: Sequence[Claim], asked: Sequence[tuple[int, int]], verdicts: Sequence[float | None]
) -> list[Claim]:
    """The claims with the judged quotes' ``backs`` set by the verdicts (a quote with no
    verdict keeps the lexical one), and each judged sentence's support worked out again."""
    judged: dict[int, dict[int, float]] = {}
    for (index, at), verdict in zip(asked, verdicts, strict=True):
        if verdict is not None:
            judged.setdefault(index, {})[at] = verdict
    out = list(claims)
    for index, verdicts_of in judged.items():
        claim = claims[index]
        quotes = tuple(
            replace(quote, backs=verdicts_of[at] >= YES) if at in verdicts_of else quote
            for at, quote in enumerate(claim.quotes)
        )
        # The verdict on its own quotes: those of the sources it cites, else the checker's.
        own = [p for at, p in verdicts_of.items() if claim.quotes[at].added != bool(claim.cited)]
        if claim.cited:
            cited = [quote for quote in quotes if not quote.added]
            supported = any(quote.backs for quote in cited) and not claim.missing
        else:
            supported = any(quote.backs for quote in quotes) and not claim.missing
            quotes = tuple(quote for quote in quotes if quote.backs)
        judged_own = max(own) if own else claim.judged
        out[index] = replace(claim, quotes=quotes, supported=supported, judged=judged_own)
    return out


async def judge_claims(claims: Sequence[Claim], judge: Judge | None) -> list[Claim]:
    """The claims after ``judge`` has read the uncertain ones (as they are without one)."""
    asked = uncertain(claims)
    if judge is None or not asked:
        return list(claims)
    verdicts = await judge(pairs_of(claims, asked))
    return apply(claims, asked, verdicts)
