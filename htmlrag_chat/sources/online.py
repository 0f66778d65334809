"""The web as a source of pages: a round's queries searched and their pages fetched, through
the recorder (``sources/recorder.py``: the cache, the network or a replay).

A round reads ``pages`` pages, each query's best first and a share each (``WebRound.urls``),
so that a plan's sub-queries that join the round late (``agent/planning.py``) take their
share of the pages the question as typed had taken alone: those are fetched already, and
stay in the cache. A query missing from a replay, a failed search or download, is said once
and kept in what the source found for the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from htmlrag_chat.base.events import Progress, Skipped, stage
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.sources.recorder import MissingFromRecording, WebRecorder
from htmlrag_chat.sources.source import Asking, Dropped, Gathered, PageSource
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult, interleave
from htmlrag_chat.web.search import SearchError
from htmlrag_chat.web.settings import SearchSettings


@dataclass
class WebSource(PageSource):
    """Search and download, recorded into the cache or replayed from it."""

    name = "web"
    network = True

    recorder: WebRecorder

    def gather(self, asking: Asking) -> WebGathering:
        # The searcher's notices (a backend handing over) belong to the question's record.
        searcher = self.recorder.searcher
        self.recorder.searcher = replace(searcher, emit=asking.emit)
        return WebGathering(self.recorder, asking)

    def key(self) -> object:
        settings = self.recorder.searcher.settings
        return [settings.cache_key(), settings.region, settings.safesearch]

    def search_with(self, settings: SearchSettings) -> None:
        if settings != self.recorder.searcher.settings:
            self.recorder.searcher = replace(self.recorder.searcher, settings=settings)

    async def settle(self, timeout: float) -> int:
        return await self.recorder.settle(timeout)

    async def page(self, url: str, asking: Asking) -> Gathered:
        """The page at ``url`` (fetched through the guard, or replayed)."""
        found = Gathered(tried={url: None})
        for result in await self.gather(asking).fetch([url]):
            if ok(result):
                found.pages[url] = page_input(result)
            else:
                found.failures[url] = failure(result)
        return found


@dataclass
class WebGathering:
    """The web as one question uses it: its rounds' searches and downloads, each failure
    said as an event and kept in what it found."""

    web: WebRecorder
    asking: Asking
    before: Gathered = field(default_factory=Gathered)  # what the rounds before this one found
    current: WebRound | None = None
    skipped: list[Dropped] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)

    async def take(self, round: int, queries: Sequence[str]) -> None:
        if self.current is None or self.current.number != round:
            self.before = self.found
            self.current = WebRound(round, self.asking.pages, list(self.before.tried))
        self.current.results += await self.search(queries)
        for result in await self.fetch(self.current.missing()):
            self.current.keep(result)

    @property
    def found(self) -> Gathered:
        """The rounds before, and this round's pages as it wants them now: a sub-query that
        joined late took its share, so a page fetched before it came may be left."""
        before, now = self.before, self.current
        found = Gathered(
            dict(before.pages), dict(before.titles), dict(before.tried),
            dict(before.failures), self.skipped, self.unrecorded,
        )  # fmt: skip
        if now is not None:
            found.titles.update(now.titles)
            found.tried.update(dict.fromkeys(now.urls()))
            found.pages.update((url, page) for url, page in now.pages.items() if url in found.tried)
            found.failures.update(now.failures)
        return found

    async def search(self, queries: Sequence[str]) -> list[list[SearchResult]]:
        """Each query's results; a query missing from a replay is skipped, and so is a
        failed search while another worked. When every search failed (and no other source
        answers), the failure is raised, not also reported as skipped: each failure is said
        once."""
        emit, alone = self.asking.emit, self.asking.alone
        per_query: list[list[SearchResult]] = []
        skipped: list[Dropped] = []
        failures: list[SearchError] = []
        with stage(emit, "search", len(queries)) as counts:
            for query in queries:
                try:
                    per_query.append(await self.web.search(query))
                except MissingFromRecording as missing:
                    skipped.append(Dropped(query, str(missing)))
                    self.unrecorded.append(query)
                except SearchError as error:
                    skipped.append(Dropped(query, str(error) if alone else error.reason))
                    failures.append(error)
            counts.update(queries=len(queries), results=sum(map(len, per_query)))
        if failures and not per_query and alone:
            raise failures[0]
        for dropped in skipped:
            self.skipped.append(dropped)
            emit(Skipped(dropped.what, dropped.reason, kind="query"))
        return per_query

    async def fetch(self, urls: list[str]) -> list[FetchResult]:
        """Every URL's result, in order (failed ones too), each failure said as it comes."""
        emit = self.asking.emit
        done = failed = 0
        seen: set[str] = set()

        def progress(result: FetchResult) -> None:
            nonlocal done, failed
            seen.add(result.url)
            done += 1
            if not ok(result):
                failed += 1
                emit(Skipped(result.url, failure(result)))
            emit(Progress("fetch", done, len(urls), failed))

        with stage(emit, "fetch", len(urls)) as counts:
            deadline = self.asking.deadline
            results = await self.web.fetch_many(urls, progress, deadline) if urls else []
            late = [result for result in results if result.url not in seen]
            for result in late:
                emit(Skipped(result.url, failure(result)))
            counts.update(pages=done - failed, failed=failed)
            if late:
                counts["left_out"] = len(late)
        return results


@dataclass
class WebRound:
    """What one round's searches found: every query's results, and the pages fetched."""

    number: int
    pages_wanted: int
    before: Sequence[str]  # URLs fetched in the rounds before
    results: list[list[SearchResult]] = field(default_factory=list)
    pages: dict[str, PageInput] = field(default_factory=dict)  # fetched in this round
    failures: dict[str, str] = field(default_factory=dict)

    def keep(self, result: FetchResult) -> None:
        if ok(result):
            self.pages[result.url] = page_input(result)
        else:
            self.failures[result.url] = failure(result)

    def missing(self) -> list[str]:
        """The round's pages not fetched yet."""
        return [url for url in self.urls() if url not in self.pages and url not in self.failures]

    @property
    def titles(self) -> dict[str, str]:
        return {result.url: result.title for results in self.results for result in results}

    def urls(self) -> list[str]:
        """The round's pages: each query's share of its best results, interleaved rank by
        rank, those of earlier rounds left out."""
        share = -(-self.pages_wanted // max(len(self.results), 1))
        merged = interleave([results[:share] for results in self.results])
        before = set(self.before)
        return [result.url for result in merged if result.url not in before][: self.pages_wanted]


def ok(result: FetchResult) -> bool:
    return result.outcome is Outcome.OK


def failure(result: FetchResult) -> str:
    """Why a download gave no page, in words."""
    return result.reason or result.outcome.value


def page_input(page: FetchResult) -> PageInput:
    return PageInput(page.url, page.body or b"", page.charset)
