"""Asking the LLM what to search for, and whether the sources suffice, in lines it can write.

Small local models break JSON far more often than a line format, so replies are scanned for
a marker at the start of a line (``SEARCH:``, ``NO SEARCH``, ``ENOUGH``, ``MISSING:``) with
bullets, numbering, bold and quotes tolerated. A reply with no marker is ``None``; the agent
then takes the safe path (search the message as typed; take the sources as enough).

Each reply is read as it streams and cut off once it has said all it will (``plan_settled``,
``check_settled``): a check that begins with ENOUGH costs its first word, not the 48 tokens
allowed for a query, and a plan ends with its last query line.

A model's reply is data, and a small model often echoes its prompt: a query with angle
brackets (a placeholder such as ``<a web search query>``), or made only of the words of the
instruction it was given ("a short web search query"), never becomes a search. Reasoning
models think first: ``<think>`` blocks are dropped before the reply is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from htmlrag_chat.reader.think import strip_think

MAX_QUERY_CHARS = 200
_DECORATION = r"^[\s\-*•>#\d.)]*\**\s*"  # bullets, numbering, bold, headings
_COLON = "[:\uff1a]"  # a CJK reply may use the full-width colon
_SEARCH = re.compile(
    _DECORATION + r"search(?:\s+query)?\s*\**\s*" + _COLON + r"\s*(.+)$", re.I | re.M
)
_NO_SEARCH = re.compile(_DECORATION + r"no[\s_-]+search\b", re.I | re.M)
_ENOUGH = re.compile(_DECORATION + r"(enough|sufficient)\b", re.I | re.M)
_MISSING = re.compile(_DECORATION + r"missing\s*\**\s*" + _COLON + r"\s*(.+)$", re.I | re.M)
_NOTHING = {"", "none", "nothing", "n/a", "-"}  # "MISSING: none" means enough
_QUOTES = "\"'`*“”„«»「」"
_WORDS = re.compile(r"\w+")


@dataclass(frozen=True)
class Plan:
    """What to search for; ``search`` is False when the message needs no new information."""

    queries: tuple[str, ...]
    search: bool = True


def parse_plan(reply: str, max_queries: int, request: str = "") -> Plan | None:
    """The queries of a rewrite reply; ``None`` when it holds no usable marker.
    ``request``: the prompt's instruction, whose words alone make no query."""
    reply = strip_think(reply)
    queries = [q for q in (_clean(m, request) for m in _SEARCH.findall(reply)) if q]
    if queries:
        unique: dict[str, str] = {}  # case differences do not make another search
        for query in queries:
            unique.setdefault(query.casefold(), query)
        return Plan(tuple(unique.values())[:max_queries])
    if _NO_SEARCH.search(reply):
        return Plan((), search=False)
    return None


def parse_missing(reply: str, request: str = "") -> str | None:
    """The query for what is missing, or ``None`` when the reply says enough (or nothing
    usable: a confused model must not cause another round, nor an echo of ``request``)."""
    reply = strip_think(reply)
    missing = _MISSING.search(reply)
    if missing is None:
        return None
    enough = _ENOUGH.search(reply)
    if enough is not None and enough.start() < missing.start():
        return None
    query = _clean(missing.group(1), request)
    return None if query.casefold().rstrip(".") in _NOTHING else query or None


def plan_settled(max_queries: int) -> Callable[[str], bool]:
    """Whether a rewrite reply read so far holds all ``parse_plan`` will take from it:
    ``max_queries`` finished SEARCH lines, or NO SEARCH before any of them."""

    def settled(reply: str) -> bool:
        reply = strip_think(reply)
        finished = reply[: reply.rfind("\n") + 1]  # a last line may still grow
        queries = {_clean(query).casefold() for query in _SEARCH.findall(finished)} - {""}
        if len(queries) >= max_queries:
            return True
        refused = _NO_SEARCH.search(reply)
        return refused is not None and not _SEARCH.search(reply, 0, refused.start())

    return settled


def check_settled(reply: str) -> bool:
    """Whether a sufficiency reply read so far already says what ``parse_missing`` will
    read in it whatever follows: ENOUGH before any MISSING (a model's first word, mostly),
    or a MISSING line that has ended."""
    reply = strip_think(reply)
    missing = _MISSING.search(reply)
    enough = _ENOUGH.search(reply)
    if enough is not None and (missing is None or enough.start() < missing.start()):
        return True
    return missing is not None and reply[missing.end() :].startswith("\n")


def marked_lines(reply: str, marker: str, request: str = "", longest: int = 300) -> list[str]:
    """What follows ``marker`` (a pattern) and a colon on the lines of ``reply`` (with the
    decorations, quotes and colons a plan's lines may have), each once whatever its case;
    none that is an echo of ``request`` or over ``longest`` characters. For other
    line-based replies than a plan's (a research's parts)."""
    line = re.compile(
        _DECORATION + f"(?:{marker})" + r"\s*\**\s*" + _COLON + r"\s*(.+)$", re.I | re.M
    )
    found: dict[str, str] = {}
    for text in line.findall(strip_think(reply)):
        cleaned = _clean(text, request, longest)
        if cleaned:
            found.setdefault(cleaned.casefold(), cleaned)
    return list(found.values())


def _clean(query: str, request: str = "", longest: int = MAX_QUERY_CHARS) -> str:
    """The query as it will be searched, or "" for one that is too long or an echo."""
    query = " ".join(query.split()).strip(_QUOTES + " ")
    if not 0 < len(query) <= longest or _echoes(query, request):
        return ""
    return query


def _echoes(query: str, request: str) -> bool:
    """A placeholder (angle brackets), or a query every word of which is the instruction's."""
    if "<" in query or ">" in query:
        return True
    words = set(_WORDS.findall(query.casefold()))
    return bool(words) and words <= set(_WORDS.findall(request.casefold()))
