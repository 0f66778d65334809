"""A round's searches and downloads: each query's results, the round's pages, fetched.

Kept apart from the question loop (``agent/loop.py``), which decides what to search and
when; here is how a round's queries become its pages. A round reads ``pages`` pages, each
query's best first and a share each (``Round.urls``), so that a plan's sub-queries that
join the round late (``agent/planning.py``) take their share of the pages the question as
typed had taken alone: those are fetched already, and stay in the cache. A query missing
from a replay, a failed search or download, is said once and kept in the question's record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from htmlrag_chat.agent.research import Dropped, Research
from htmlrag_chat.base.events import EventSink, Progress, Skipped, stage
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.recorder import MissingFromRecording, WebRecorder
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult, interleave
from htmlrag_chat.web.search import SearchError


@dataclass
class Gathering:
    """The web as one question uses it: its searches and downloads, each failure said as
    an event and kept in its record ``run``."""

    web: WebRecorder
    run: Research
    emit: EventSink
    deadline: float | None  # seconds after the first page
    # The user's documents answer too: a failed search is then no error, each query is
    # skipped with why in words (the engines cannot be reached), not the recording advice.
    documents: bool = False

    async def search(self, queries: Sequence[str]) -> list[list[SearchResult]]:
        """Each query's results; a query missing from a replay is skipped, and so is a
        failed search while another worked. When every search failed (and no documents
        answer), the failure is raised, not also reported as skipped: each failure is said
        once."""
        per_query: list[list[SearchResult]] = []
        skipped: list[Dropped] = []
        failures: list[SearchError] = []
        with stage(self.emit, "search", len(queries)) as counts:
            for query in queries:
                try:
                    per_query.append(await self.web.search(query))
                except MissingFromRecording as missing:
                    skipped.append(Dropped(query, str(missing)))
                    self.run.unrecorded.append(query)
                except SearchError as error:
                    skipped.append(Dropped(query, error.reason if self.documents else str(error)))
                    failures.append(error)
            counts.update(queries=len(queries), results=sum(map(len, per_query)))
        if failures and not per_query and not self.documents:
            raise failures[0]
        for dropped in skipped:
            self.run.skipped.append(dropped)
            self.emit(Skipped(dropped.what, dropped.reason, kind="query"))
        return per_query

    async def fetch(self, urls: list[str]) -> list[FetchResult]:
        """Every URL's result, in order (failed ones too), each failure said as it comes."""
        emit = self.emit
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
            results = await self.web.fetch_many(urls, progress, self.deadline) if urls else []
            late = [result for result in results if result.url not in seen]
            for result in late:
                emit(Skipped(result.url, failure(result)))
            counts.update(pages=done - failed, failed=failed)
            if late:
                counts["left_out"] = len(late)
        return results


@dataclass
class Round:
    """What one round's searches found: every query's results, and the pages fetched."""

    pages_wanted: int
    before: Sequence[str]  # URLs fetched in the rounds before
    results: list[list[SearchResult]] = field(default_factory=list)
    done: set[str] = field(default_factory=set)  # fetched in this round
    pages: dict[str, FetchResult] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    async def take(self, gathering: Gathering, queries: Sequence[str]) -> None:
        """``queries`` searched, and the round's pages that are not fetched yet fetched."""
        self.results += await gathering.search(queries)
        for result in await gathering.fetch([url for url in self.urls() if url not in self.done]):
            self.done.add(result.url)
            if ok(result):
                self.pages[result.url] = result
            else:
                self.failures[result.url] = failure(result)

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
