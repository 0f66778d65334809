"""Answer text as the Markdown the transcript renders: citations become links.

``[3]`` turns into a link to ``cite:3``, so clicking it highlights source 3; the text on
screen stays ``[3]``. Everything else in the answer is left to the Markdown widget, which
renders text as text (no console markup, no escape sequences: the agent already passed the
answer through ``terminal_safe``).
"""

from __future__ import annotations

import re

# The groups the citation filter lets through: [3], [1, 2], [2-4], [1][2]; not [x](url).
_CITATION = re.compile(r"\[(\d+(?:\s*[,\-\u2013]\s*\d+)*)\](?!\()")
CITE_SCHEME = "cite:"
_WIDEST_RANGE = 50  # a stored answer is data: [1-999999999] must not build a huge list


def link_citations(text: str) -> str:
    return _CITATION.sub(_link, text)


def _link(match: re.Match[str]) -> str:
    group = match.group(1)
    return f"[\\[{group}\\]]({CITE_SCHEME}{''.join(group.split())})"


def cited_numbers(href: str) -> tuple[int, ...]:
    """The source numbers a ``cite:`` link names (``cite:2-4`` -> 2, 3, 4); () otherwise."""
    if not href.startswith(CITE_SCHEME):
        return ()
    numbers: list[int] = []
    for part in href[len(CITE_SCHEME) :].split(","):
        low, _, high = part.replace("\u2013", "-").partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return ()
        if high and int(high) - int(low) > _WIDEST_RANGE:
            return ()
        numbers.extend(range(int(low), int(high or low) + 1))
    return tuple(numbers)
