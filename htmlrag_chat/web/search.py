"""Web search through ``ddgs`` (DuckDuckGo first, then the fallbacks named in the settings).

``ddgs`` is synchronous, so searches run in a worker thread. Its failures are easy to
misread: a rate limit surfaces as ``DDGSException("No results found.")`` rather than
``RatelimitException``, and no network as a DNS or connect error inside a DDGSException.
``classify`` turns them into a kind a user can act on, searches are retried with backoff,
and what finally fails says what happened and what to do.
"""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from htmlrag_chat.errors import EXIT_NETWORK, UserError
from htmlrag_chat.safety import one_line, safe_url
from htmlrag_chat.web.results import SearchResult

DEFAULT_BACKENDS = ("duckduckgo", "brave", "mojeek")

# What to do, for each kind. --replay alone answers only what the cache already holds, which
# for a new user is nothing: offline, the way forward is a recording.
_REPLAY = "or replay a question asked before with --replay"
_ADVICE = {
    "offline": "the search engines cannot be reached (no network?): check the connection; "
    "offline, answer from a recording: htmlrag-chat cache import --jsonl FILE (a checkout "
    "has demo/recording.jsonl.gz, which `make demo` replays), or --replay-db FILE for a "
    "cache file made elsewhere",
    "rate_limited": "no results: the search engines returned none, which is also how "
    f"DuckDuckGo answers when it rate-limits: wait a minute and retry, rephrase, {_REPLAY}",
    "timeout": f"the search timed out: retry, raise the timeout, {_REPLAY}",
    "failed": f"the search failed: retry later, {_REPLAY}",
}
DETAIL_CHARS = 160  # of the engines' own message; cut between words, never inside one
_OFFLINE_SIGNS = ("dnserror", "connecterror", "connection refused", "network is unreachable")
_TRACKING_PARAMS = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid")


class SearchError(UserError):
    """A search that failed after its retries; ``kind`` says why."""

    exit_code = EXIT_NETWORK

    def __init__(self, query: str, kind: str, detail: str) -> None:
        super().__init__(f"search for {query!r} failed: {_ADVICE[kind]} ({detail})")
        self.kind = kind


@dataclass(frozen=True)
class SearchSettings:
    backends: tuple[str, ...] = DEFAULT_BACKENDS
    region: str = "wt-wt"  # ddgs's "no region"
    safesearch: str = "moderate"
    max_results: int = 8
    timeout: int = 10  # seconds per request
    retries: int = 2  # after the first try
    backoff: float = 1.0  # seconds before the first retry, doubled for each next one
    proxy: str | None = None


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


def normalize_url(url: str) -> str:
    """A URL reduced to what identifies the page: for finding duplicates among results."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower().removeprefix("www.")
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    query = urlencode(
        sorted(
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if not key.lower().startswith(_TRACKING_PARAMS)
        )
    )
    return urlunsplit(("https", host, parts.path.rstrip("/") or "/", query, ""))


def deduplicate(results: list[SearchResult]) -> list[SearchResult]:
    """The first result for each normalized URL, in the engines' order."""
    seen: set[str] = set()
    unique = []
    for result in results:
        key = normalize_url(result.url)
        if key not in seen:
            seen.add(key)
            unique.append(result)
    return unique


@dataclass
class WebSearcher:
    settings: SearchSettings = SearchSettings()
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep  # tests pass a recorder

    async def search(self, query: str) -> list[SearchResult]:
        """Results for ``query``, deduplicated; raises SearchError after the retries."""
        from ddgs.exceptions import DDGSException

        delay = self.settings.backoff
        for attempt in range(self.settings.retries + 1):
            try:
                raw = await asyncio.to_thread(self._text, query)
            except DDGSException as error:
                kind, detail = classify(error), _first_line(error)
            else:
                results = deduplicate([_result(item) for item in raw if item.get("href")])
                if results:
                    return results
                kind, detail = "rate_limited", "empty result list"
            if attempt < self.settings.retries:
                await self.sleep(delay)
                delay *= 2
        raise SearchError(query, kind, detail)

    def _text(self, query: str) -> list[dict[str, Any]]:
        from ddgs import DDGS

        settings = self.settings
        return DDGS(timeout=settings.timeout, proxy=settings.proxy).text(
            query,
            region=settings.region,
            safesearch=settings.safesearch,
            max_results=settings.max_results,
            backend=",".join(settings.backends),
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
