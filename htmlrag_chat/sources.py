"""Where the pipeline's inputs come from: the live web, recorded into the cache, or a replay.

Record is the default: a search or page found in the cache is reused (unless older than the
``--refresh`` age), anything else is fetched live and stored. A search imported from a
recording (stored without region and safesearch) is reused under any settings, so a recording
answers in record mode too. Replay reads only the cache and never creates a network client,
so it opens no socket; what is missing is reported by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from htmlrag_chat.errors import UserError
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from htmlrag_chat.web.search import SearchSettings, WebSearcher

NOT_RECORDED = "not in the recording"


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
        # A replay takes the recorded results whatever the settings they were made with;
        # record mode takes those made with these settings, or imported with none.
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
        for url in dict.fromkeys(urls):
            cached = self.store.get_page(url, max_age=None if self.replay else self.max_age)
            if cached is not None:
                found[url] = cached
            elif self.replay:
                found[url] = FetchResult(url, Outcome.FAILED, NOT_RECORDED)
            if url in found and on_result:
                on_result(found[url])
        missing = [url for url in dict.fromkeys(urls) if url not in found]
        if missing:
            for result in await self._download(missing, on_result):
                found[result.url] = result
        return [found[url] for url in urls]

    async def _download(
        self, urls: list[str], on_result: Callable[[FetchResult], None] | None
    ) -> list[FetchResult]:
        def record(result: FetchResult) -> None:
            self.store.put_page(result)
            if on_result:
                on_result(result)

        async with Fetcher(self.fetch_policy) as fetcher:
            return await fetcher.fetch_many(urls, record)
