"""Rows of the cache file as records, checked: a row this code cannot read is a ``BadRow``.

A cache file can pass SQLite's integrity check and still hold rows the code never wrote: an
outcome no release knows (``'bogus'``), results or sources that are not JSON, a body stored
as text, a list where an object belongs; an older or newer release, a hand edit, or a tool
that writes SQLite may have put them there. Every JSON column and enum is checked where it
is read, so the caller can leave the one row out, say so, and go on with the others (a
search or a page is then missing, as if never fetched; an answer is missing, as if the
question had been stopped).
"""

from __future__ import annotations

import json
from typing import Any

from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult


class BadRow(ValueError):
    """A row that does not hold what this version of the code writes."""


def search_results(text: object) -> list[SearchResult]:
    """``searches.results``: a JSON list of {url, title, snippet} objects."""
    items = _json(text, list, "results")
    items = [_strings(item, ("url",), ("title", "snippet")) for item in items]
    return [
        SearchResult(item["url"], item.get("title") or "", item.get("snippet") or "")
        for item in items
    ]


def fetch_result(row: dict[str, Any]) -> FetchResult:
    """A ``pages`` row as the download it records."""
    try:
        outcome = Outcome(row["outcome"])
    except ValueError:
        raise BadRow(f"outcome {str(row['outcome'])[:40]!r}") from None
    headers = _json(row["headers"], dict, "headers")
    if not all(isinstance(value, str) for value in headers.values()):
        raise BadRow("headers: not text")
    if not isinstance(row["body"], bytes | None):
        raise BadRow("body: not bytes")
    for column in ("charset", "reason", "final_url", "content_type"):
        if not isinstance(row[column], str | None):
            raise BadRow(f"{column}: not text")
    if not isinstance(row["status"], int | None):
        raise BadRow("status: not a number")
    return FetchResult(**(row | {"outcome": outcome, "headers": headers}), from_cache=True)


def answer_record(row: dict[str, Any]) -> dict[str, Any]:
    """An ``answers`` row joined to its message (``answer_id``, ``answered_at``)."""
    sources = _json(row["sources"], list, "sources")
    for source in sources:
        _strings(source, ("url",), ("title", "content"))
        if not isinstance(source.get("number"), int):
            raise BadRow("sources: a source without its number")
    citations = _json(row["citations"], list, "citations")
    flags = _json(row["flags"], list, "flags")
    if not isinstance(row["text"], str) or not all(isinstance(flag, str) for flag in flags):
        raise BadRow("text or flags: not text")
    return {
        "id": row["answer_id"],
        "reader": row["reader"],
        "text": row["text"],
        "sources": sources,
        "citations": citations,
        "flags": flags,
        "created_at": row["answered_at"],
    }


def _json(text: object, kind: type, column: str) -> Any:
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        raise BadRow(f"{column}: not JSON") from None
    if not isinstance(value, kind):
        raise BadRow(f"{column}: not a JSON {kind.__name__}")
    return value


def _strings(item: object, required: tuple[str, ...], optional: tuple[str, ...]) -> dict:
    """``item`` as an object whose ``required`` and ``optional`` keys hold text."""
    if not isinstance(item, dict):
        raise BadRow("an entry that is not an object")
    if not all(isinstance(item.get(key), str) for key in required) or not all(
        isinstance(item.get(key, ""), str | None) for key in optional
    ):
        raise BadRow("an entry without its text")
    return item
