"""Citations the check proves wrong, corrected in the answer, and marked as corrected.

A small reader often says something true of one source and cites another: Qwen2.5-Coder-1.5B
answers the demo question from The Verge and cites the Docker page (the next source's
``[n]`` header follows the words it quoted). The check already finds where such a sentence
comes from (``Claim.elsewhere``: a passage of a source it does not cite that backs it, in a
source that holds every number of the sentence, so that "beta 7" is never moved to a page
that merely shares its other words). Here that finding becomes the citation the answer
shows: the model's ``[2]`` is replaced by the checker's ``[1]``, marked ``MARK`` so that the
change is never silent, and the claim keeps both (``cited``, the model's; ``corrected``,
the checker's). A sentence that cites nothing and that the checker found backed gets the
source it found, marked the same way. Every face then says which citation was moved and
why (``evidence.words.correction_lines``).

Only what the check proves: a sentence no source backs keeps its flag, and one that its own
citation backs is left as it is. ``--no-correct-citations`` (``reader.correct_citations``)
turns it off; the flag then names the source that does back it, as before.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.reader.citation_syntax import CORRECTED
from htmlrag_chat.reader.citations import recite

MARK = CORRECTED  # "†": a citation the checker placed, not the model


def correct(claims: Sequence[Claim]) -> list[Claim]:
    """The claims with the citations the check proves wrong (or missing) corrected."""
    return [_corrected(claim) for claim in claims]


def _corrected(claim: Claim) -> Claim:
    if not claim.checked or claim.looped or claim.corrected:
        return claim
    if claim.cited:
        found = claim.elsewhere
        if not found:
            return claim
        return replace(claim, corrected=(_best(found).source,), supported=True)
    added = [quote for quote in claim.backing if quote.added]
    if not added:
        return claim
    return replace(claim, corrected=(_best(added).source,))


def _best(quotes: Sequence[Quote]) -> Quote:
    return max(quotes, key=lambda quote: quote.score)


def corrected_answer(answer: str, claims: Sequence[Claim], numbers: Collection[int]) -> str:
    """``answer`` (its text or its Markdown) showing each corrected claim's sources, each
    number marked ``MARK``."""
    changes = {
        claim.sentence: "".join(f"[{number}]{MARK}" for number in claim.corrected)
        for claim in claims
        if claim.corrected
    }
    return recite(answer, numbers, changes) if changes else answer


def unmarked(answer: str) -> str:
    """An answer as a reader should read it again (a follow-up's history): the checker's
    marks taken off its citations, so that a model never learns to write them."""
    return answer.replace(f"]{MARK}", "]")
