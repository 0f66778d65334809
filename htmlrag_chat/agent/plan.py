"""Asking the LLM what to search for, and whether the sources suffice, in lines it can write.

Small local models break JSON far more often than a line format, so replies are scanned for
a marker at the start of a line (``SEARCH:``, ``NO SEARCH``, ``ENOUGH``, ``MISSING:``) with
bullets, numbering, bold and quotes tolerated. A reply with no marker is ``None``; the agent
then takes the safe path (search the message as typed; take the sources as enough).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.prompts import load_prompt, today
from htmlrag_chat.reader import Message

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


@dataclass(frozen=True)
class Plan:
    """What to search for; ``search`` is False when the message needs no new information."""

    queries: tuple[str, ...]
    search: bool = True


def rewrite_messages(message: str, history: Sequence[Message], max_queries: int) -> list[Message]:
    prompt = load_prompt("rewrite").format(
        today=today(),
        history=format_history(history) or "(none)",
        message=message,
        max_queries=max_queries,
    )
    return [Message("user", prompt.strip())]


def sufficiency_messages(question: str, sources_text: str) -> list[Message]:
    prompt = load_prompt("sufficiency").format(sources=sources_text, question=question)
    return [Message("user", prompt.strip())]


def format_history(history: Sequence[Message], max_chars: int = 600) -> str:
    """The conversation as ``User:``/``Assistant:`` lines, long answers shortened: the
    rewriter needs what was talked about, not every word."""
    lines = []
    for message in history:
        text = " ".join(message.content.split())
        if len(text) > max_chars:
            text = text[:max_chars].rstrip() + " ..."
        lines.append(f"{message.role.capitalize()}: {text}")
    return "\n".join(lines)


def parse_plan(reply: str, max_queries: int) -> Plan | None:
    """The queries of a rewrite reply; ``None`` when it holds no usable marker."""
    queries = [q for q in (_clean(m) for m in _SEARCH.findall(reply)) if q]
    if queries:
        unique: dict[str, str] = {}  # case differences do not make another search
        for query in queries:
            unique.setdefault(query.casefold(), query)
        return Plan(tuple(unique.values())[:max_queries])
    if _NO_SEARCH.search(reply):
        return Plan((), search=False)
    return None


def parse_missing(reply: str) -> str | None:
    """The query for what is missing, or ``None`` when the reply says enough (or nothing
    usable: a confused model must not cause another round)."""
    missing = _MISSING.search(reply)
    if missing is None:
        return None
    enough = _ENOUGH.search(reply)
    if enough is not None and enough.start() < missing.start():
        return None
    query = _clean(missing.group(1))
    return None if query.casefold().rstrip(".") in _NOTHING else query or None


def _clean(query: str) -> str:
    query = " ".join(query.split()).strip(_QUOTES + " ")
    return query if 0 < len(query) <= MAX_QUERY_CHARS else ""
