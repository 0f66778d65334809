"""A reader's Yes or No, read as a probability: how the judge of ``evidence/judging.py``
hears a model.

In process (a GGUF file, a transformers model) the probability comes from the logits of the
reply's first token: the mass of the tokens that start "Yes" against those that start "No".
A server gives the same through ``logprobs``/``top_logprobs`` where it supports them;
where it does not, its one-token reply is read as 1 or 0. Anything else (a model that
answers "Maybe", or with nothing) is no verdict: None.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

YES, NO = "yes", "no"
_FIRST_WORD = re.compile(r"[^\W\d_]+")


def word_ids(tokenize: Callable[[str], list[int]]) -> tuple[list[int], list[int]]:
    """The first token of each common spelling of Yes and of No ("Yes", "yes", " Yes",
    "YES"...), without a token both share."""
    found: dict[str, set[int]] = {}
    for word in (YES, NO):
        spellings = {word, word.capitalize(), word.upper(), f" {word}", f" {word.capitalize()}"}
        found[word] = {ids[0] for text in spellings if (ids := tokenize(text))}
    shared = found[YES] & found[NO]
    return sorted(found[YES] - shared), sorted(found[NO] - shared)


def from_logits(logits: Sequence[float], yes: Sequence[int], no: Sequence[int]) -> float | None:
    """P(Yes) / (P(Yes) + P(No)) from a first token's logits."""
    values = [float(logits[i]) for i in (*yes, *no)]
    if not values:
        return None
    top = max(values)
    weights = [math.exp(value - top) for value in values]
    said_yes = sum(weights[: len(yes)])
    total = sum(weights)
    return said_yes / total if total > 0 else None


def from_top(candidates: Iterable[tuple[str, float]]) -> float | None:
    """The same from a server's ``top_logprobs`` (token text, log-probability); None when
    neither word is among them."""
    mass = {YES: 0.0, NO: 0.0}
    for token, logprob in candidates:
        word = token.strip().casefold()
        if word in mass and math.isfinite(logprob):
            mass[word] += math.exp(logprob)
    total = mass[YES] + mass[NO]
    return mass[YES] / total if total > 0 else None


def from_reply(text: str) -> float | None:
    """A reply's first word as a verdict: Yes 1, No 0, anything else none."""
    match = _FIRST_WORD.search(text)
    word = match[0].casefold() if match else ""
    return {YES: 1.0, NO: 0.0}.get(word)
