"""Where the pipeline's inputs come from: the live web, recorded into the cache, or a replay.

Record is the default: a search or page found in the cache is reused (unless older than the
``--refresh`` age), anything else is fetched live and stored. Replay reads only the cache and
never creates a network client, so it opens no socket; what is missing is reported by name.

Failures heal. A transient one (timeout, reset, 5xx) is never stored, so the next request
tries again; a permanent one (404, not HTML, blocked, a bot wall) is reused for at most
``FAILURE_MAX_AGE``; and a failed refetch of a page the cache holds keeps and returns that
page, since a site that is down for a moment should not cost an answer its source.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import inf

from htmlrag_chat.errors import UserError
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from htmlrag_chat.web.search import SearchSettings, WebSearcher

NOT_RECORDED = "not in the recording"
KEPT_STORED_PAGE = "refetching failed: the page stored earlier is used"
# How long a permanent failure (404, 410, not HTML, too large, blocked, a bot challenge) is
# reused before the URL is tried again: pages move back, walls come down.
FAILURE_MAX_AGE = 24 * 3600.0


class MissingFromRecording(UserError):
    """Replay asked for a query or URL the recording does not hold."""


@dataclass
class Sources:
    store: Store
    replay: bool = False
    max_age: float | None = None  # --refresh: cached entries older than this are redone
    search_settings: SearchSettings = field(default_factory=SearchSettings)
    fetch_policy: FetchPolicy = field(default_factory=FetchPolicy)

    async def search(self, query: str) -> list[SearchResult]:
        settings = self.search_settings
        # A replay takes the recorded results whatever the settings they were made with.
        cached = self.store.get_search(
            query,
            region=None if self.replay else settings.region,
            safesearch=None if self.replay else settings.safesearch,
            max_age=None if self.replay else self.max_age,
        )
        if cached is not None:
            return cached
        if self.replay:
            raise MissingFromRecording(f"query {NOT_RECORDED}: {query!r}")
        results = await WebSearcher(settings).search(query)
        self.store.put_search(
            query,
            results,
            region=settings.region,
            safesearch=settings.safesearch,
            backend=",".join(settings.backends),
        )
        return results

    async def fetch_many(
        self, urls: Sequence[str], on_result: Callable[[FetchResult], None] | None = None
    ) -> list[FetchResult]:
        """One result per URL, in order: cached ones first, the rest live (or, in replay,
        FAILED with "not in the recording")."""
        found: dict[str, FetchResult] = {}
        stored: dict[str, FetchResult] = {}  # good pages too old to reuse, kept if refetching fails
        for url in dict.fromkeys(urls):
            cached = self.store.get_page(url)
            if self.replay:
                found[url] = cached or FetchResult(url, Outcome.FAILED, NOT_RECORDED)
            elif cached is not None and self._reusable(cached):
                found[url] = cached
            elif cached is not None and cached.outcome is Outcome.OK:
                stored[url] = cached
            if url in found and on_result:
                on_result(found[url])
        missing = [url for url in dict.fromkeys(urls) if url not in found]
        if missing:
            for result in await self._download(missing, stored, on_result):
                found[result.url] = result
        return [found[url] for url in urls]

    def _reusable(self, cached: FetchResult) -> bool:
        """Whether a cached outcome answers a live request: a good page until ``--refresh``
        says it is too old, a permanent failure for at most ``FAILURE_MAX_AGE``. A page the
        guard blocked is tried again once private addresses are allowed."""
        age = time.time() - cached.fetched_at
        if cached.outcome is Outcome.OK:
            return self.max_age is None or age <= self.max_age
        if cached.outcome is Outcome.BLOCKED and self.fetch_policy.allow_private:
            return False
        return age <= min(FAILURE_MAX_AGE, self.max_age if self.max_age is not None else inf)

    async def _download(
        self,
        urls: list[str],
        stored: dict[str, FetchResult],
        on_result: Callable[[FetchResult], None] | None,
    ) -> list[FetchResult]:
        """Fetch ``urls`` live and store what may be reused; a URL whose refetch failed comes
        back as its ``stored`` page, with the failure as its reason."""
        results: dict[str, FetchResult] = {}

        def record(result: FetchResult) -> None:
            if not result.transient:
                self.store.put_page(result)  # which never replaces a good page with a failure
            if result.outcome is not Outcome.OK and result.url in stored:
                result = replace(stored[result.url], reason=f"{KEPT_STORED_PAGE} ({result.reason})")
            results[result.url] = result
            if on_result:
                on_result(result)

        async with Fetcher(self.fetch_policy) as fetcher:
            await fetcher.fetch_many(urls, record)
        return [results[url] for url in urls]
