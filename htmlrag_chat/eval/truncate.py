"""Cutting a text to a token budget, what the ``plain`` and ``clean`` baselines do.

The token counter only counts, so the cut is found by search over character prefixes: a
window doubling from about four characters per token until it overflows, then bisection.
About fifteen counts of short prefixes, whatever the length of the text, and the prefix
returned has been counted: it never exceeds the budget, even where BPE is not monotonic.
"""

from __future__ import annotations

from htmlrag_chat.base.counting import TokenCounter

_CHARS_PER_TOKEN = 4  # a first window; the search widens it when a text is denser


def truncate(text: str, budget: int, counter: TokenCounter) -> str:
    """The longest prefix of ``text`` found to fit in ``budget`` tokens."""
    if counter.count(text) <= budget:
        return text
    fits, over = 0, min(len(text), max(budget, 1) * _CHARS_PER_TOKEN)
    while over < len(text) and counter.count(text[:over]) <= budget:
        fits, over = over, min(len(text), over * 2)
    # count(text[:fits]) <= budget < count(text[:over]) (for over == len(text): checked above)
    while over - fits > 1:
        middle = (fits + over) // 2
        if counter.count(text[:middle]) <= budget:
            fits = middle
        else:
            over = middle
    return text[:fits]
