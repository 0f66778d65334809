"""Where the pipeline's inputs come from: the live web, recorded into the cache, or a replay.

Record is the default: a search or page found in the cache is reused (unless older than the
``--refresh`` age), anything else is fetched live and stored. A search imported from a
recording (stored without region and safesearch) is reused under any settings, so a recording
answers in record mode too. Replay reads only the cache and never creates a network client,
so it opens no socket; what is missing is reported by name.

Failures heal. A transient one (timeout, reset, 5xx) is never stored, so the next request
tries again; a permanent one (404, not HTML, blocked, a bot wall) is reused for at most
``FAILURE_MAX_AGE``; and a failed refetch of a page the cache holds keeps and returns that
page, since a site that is down for a moment should not cost an answer its source.

A question never waits for its slowest page: ``deadline`` seconds after the first page has
arrived, ``fetch_many`` returns with what is there and reports the rest as left out. Those
downloads go on in the background and land in the cache as they finish, ready for the next
question; ``settle`` gives them a last moment before the program exits.

The searcher and the fetcher are handed in, as httpx's client takes a transport: the
recorder decides between cache and network, they do the network, and tests give it real
ones pointed at loopback servers. Neither opens a socket before it is asked to, so a replay
built with the defaults opens none. The searcher's settings also key the cache and carry
``--site``/``--exclude-site``, which the recorder applies to every result and download,
cached and recorded ones included.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from math import inf

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from htmlrag_chat.web.search import WebSearcher, kept
from htmlrag_chat.web.sites import allowed, refusal

NOT_RECORDED = "not in the recording"
LEFT_OUT = "left out: still downloading"
KEPT_STORED_PAGE = "refetching failed: the page stored earlier is used"
# How long a permanent failure (404, 410, not HTML, too large, blocked, a bot challenge) is
# reused before the URL is tried again: pages move back, walls come down.
FAILURE_MAX_AGE = 24 * 3600.0


class MissingFromRecording(UserError):
    """Replay asked for a query or URL the recording does not hold."""


@dataclass
class WebRecorder:
    """The web as the pipeline sees it: searched and fetched live and recorded into the
    store, or replayed from it. (The reader's numbered contexts are ``reader.Source``.)"""

    store: Store
    searcher: WebSearcher = field(default_factory=WebSearcher)
    fetcher: Fetcher = field(default_factory=Fetcher)
    replay: bool = False
    max_age: float | None = None  # --refresh: cached entries older than this are redone
    # Downloads a deadline left behind, with the URLs each one still waits for.
    _late: dict[asyncio.Task[None], set[str]] = field(default_factory=dict, init=False)

    async def search(self, query: str) -> list[SearchResult]:
        settings = self.searcher.settings
        # A replay takes the recorded results whatever the settings they were made with;
        # record mode takes those made with these settings, or imported with none.
        cached = self.store.get_search(
            query,
            region=None if self.replay else settings.region,
            safesearch=None if self.replay else settings.safesearch,
            backend=None if self.replay else settings.cache_key(),
            max_age=None if self.replay else self.max_age,
        )
        if cached is not None:  # recorded with more results than asked for now: the first ones
            return kept(cached, settings)
        if self.replay:
            raise MissingFromRecording(f"query {NOT_RECORDED}: {query!r}")
        results = await self.searcher.search(query)
        self.store.put_search(
            query,
            results,
            region=settings.region,
            safesearch=settings.safesearch,
            backend=settings.cache_key(),
        )
        return results

    async def fetch_many(
        self,
        urls: Sequence[str],
        on_result: Callable[[FetchResult], None] | None = None,
        deadline: float | None = None,
    ) -> list[FetchResult]:
        """One result per URL, in order: cached ones first, the rest live (or, in replay,
        FAILED with "not in the recording"). With a ``deadline``, a page still downloading
        that many seconds after the first one arrived comes back FAILED as left out, and is
        cached when it does arrive."""
        found: dict[str, FetchResult] = {}
        stored: dict[str, FetchResult] = {}  # good pages too old to reuse, kept if refetching fails
        settings = self.searcher.settings
        for url in dict.fromkeys(urls):
            cached = self.store.get_page(url)
            if not allowed(url, settings):  # never downloaded, whatever a result said
                found[url] = FetchResult(url, Outcome.SKIPPED, refusal(settings))
            elif self.replay:
                found[url] = cached or FetchResult(url, Outcome.FAILED, NOT_RECORDED)
            elif cached is not None and self._reusable(cached):
                found[url] = cached
            elif cached is not None and cached.outcome is Outcome.OK:
                stored[url] = cached
            if url in found and on_result:
                on_result(found[url])
        missing = [url for url in dict.fromkeys(urls) if url not in found]
        if missing:
            started = any(result.outcome is Outcome.OK for result in found.values())
            found.update(await self._download(missing, stored, on_result, deadline, started))
        return [found[url] for url in urls]

    def _reusable(self, cached: FetchResult) -> bool:
        """Whether a cached outcome answers a live request: a good page until ``--refresh``
        says it is too old, a permanent failure for at most ``FAILURE_MAX_AGE``. A page the
        guard blocked is tried again once private addresses are allowed."""
        age = time.time() - cached.fetched_at
        if cached.outcome is Outcome.OK:
            return self.max_age is None or age <= self.max_age
        if cached.outcome is Outcome.BLOCKED and self.fetcher.policy.allow_private:
            return False
        return age <= min(FAILURE_MAX_AGE, self.max_age if self.max_age is not None else inf)

    async def settle(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for downloads a deadline left behind, then cancel
        the rest; returns how many pages were still missing then."""
        if not self._late:
            return 0
        _, unfinished = await asyncio.wait(list(self._late), timeout=timeout)
        left = sum(len(self._late.get(task, ())) for task in unfinished)
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)
        return left

    async def _download(
        self,
        urls: list[str],
        stored: dict[str, FetchResult],
        on_result: Callable[[FetchResult], None] | None,
        deadline: float | None,
        started: bool,
    ) -> dict[str, FetchResult]:
        """Fetch ``urls`` live and store what may be reused; a URL whose refetch failed comes
        back as its ``stored`` page, with the failure as its reason. With a ``deadline``,
        what has not arrived by then comes back as left out (see ``fetch_many``)."""
        arrived: dict[str, FetchResult] = {}
        first_page = asyncio.Event()
        if started:
            first_page.set()
        waiting = set(urls)

        settings = self.searcher.settings

        def record(result: FetchResult) -> None:
            if not result.transient:
                self.store.put_page(result)  # which never replaces a good page with a failure
            if result.final_url and not allowed(result.final_url, settings):  # redirected away
                result = replace(result, outcome=Outcome.SKIPPED, body=None,
                                 reason=f"redirected to {refusal(settings)}")  # fmt: skip
            waiting.discard(result.url)
            if task in self._late:  # the question went on without it
                return
            if result.outcome is not Outcome.OK and result.url in stored:
                result = replace(stored[result.url], reason=f"{KEPT_STORED_PAGE} ({result.reason})")
            arrived[result.url] = result
            if result.outcome is Outcome.OK:
                first_page.set()
            if on_result:
                on_result(result)

        task = asyncio.create_task(self._fetch_all(urls, record))
        if deadline is None:
            await task
            return arrived
        clock = asyncio.create_task(first_page.wait())
        try:
            await asyncio.wait({task, clock}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                await asyncio.wait({task}, timeout=deadline)
        except asyncio.CancelledError:
            task.cancel()  # the question was stopped: so are its downloads
            raise
        finally:
            clock.cancel()
        if not task.done():
            self._late[task] = waiting
            task.add_done_callback(lambda done: self._late.pop(done, None))
        reason = f"{LEFT_OUT} {deadline:g} s after the first page"
        for url in waiting:
            arrived[url] = FetchResult(url, Outcome.FAILED, reason)
        return arrived

    async def _fetch_all(self, urls: list[str], record: Callable[[FetchResult], None]) -> None:
        async with self.fetcher as fetcher:
            await fetcher.fetch_many(urls, record)
