"""The ``ddgs`` engines (DuckDuckGo, Brave, Mojeek, ...): scraped result pages, no key.

``ddgs`` is synchronous, so a search runs in a worker thread. Its failures are easy to
misread: a rate limit surfaces as ``DDGSException("No results found.")`` rather than
``RatelimitException``, and no network as a DNS or connect error inside a DDGSException.
``classify`` turns them into a kind a user can act on.
"""

from __future__ import annotations

import asyncio
import textwrap
from typing import Any

from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.web.apis import BackendFailure, with_operators
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.settings import SearchSettings

DETAIL_CHARS = 160  # of the engines' own message; cut between words, never inside one

_OFFLINE_SIGNS = ("dnserror", "connecterror", "connection refused", "network is unreachable")
_TIMELIMIT = {"day": "d", "week": "w", "month": "m", "year": "y"}


def classify(error: Exception) -> str:
    """The kind of a ddgs failure: offline, rate_limited, timeout or failed."""
    from ddgs.exceptions import RatelimitException, TimeoutException

    text = str(error).lower()
    if isinstance(error, TimeoutException) or "timeout" in text or "timed out" in text:
        return "timeout"
    if any(sign in text for sign in _OFFLINE_SIGNS):
        return "offline"
    if isinstance(error, RatelimitException) or "no results" in text or "ratelimit" in text:
        return "rate_limited"
    return "failed"


async def ddgs_search(
    engines: tuple[str, ...], query: str, settings: SearchSettings
) -> list[SearchResult]:
    """Results of ``engines`` (ddgs tries them in order); an empty list is how a rate limit
    often looks, so it is one (``rate_limited``)."""
    from ddgs.exceptions import DDGSException

    name = ",".join(engines)
    try:
        raw = await asyncio.to_thread(_text, engines, query, settings)
    except DDGSException as error:
        raise BackendFailure(classify(error), f"{name}: {_first_line(error)}") from None
    results = [_result(item) for item in raw if item.get("href")]
    if not results:
        raise BackendFailure("rate_limited", f"{name}: empty result list")
    return results


def _text(engines: tuple[str, ...], query: str, settings: SearchSettings) -> list[dict[str, Any]]:
    from ddgs import DDGS

    return DDGS(timeout=settings.timeout, proxy=settings.proxy).text(
        with_operators(query, settings),
        region=settings.region,
        safesearch=settings.safesearch,
        timelimit=_TIMELIMIT.get(settings.time or ""),
        max_results=settings.max_results,
        backend=",".join(engines),
    )


def _result(item: dict[str, Any]) -> SearchResult:
    """A ddgs result as stored: URL and text from the web made safe before anything keeps
    them."""
    return SearchResult(
        url=safe_url(str(item["href"])),
        title=one_line(str(item.get("title", ""))),
        snippet=one_line(str(item.get("body", ""))),
    )


def _first_line(error: Exception) -> str:
    """The first line of ddgs's message (which names every engine's URL and can run to
    kilobytes), shortened between words to ``DETAIL_CHARS``."""
    lines = str(error).strip().splitlines()
    line = lines[0] if lines else type(error).__name__
    return textwrap.shorten(line, DETAIL_CHARS, placeholder=" …") or line[:DETAIL_CHARS]
