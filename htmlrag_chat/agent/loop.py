"""The question loop: plan -> search -> fetch -> clean and prune -> (enough?) -> read -> check.

Every stage reports typed events; CPU-heavy stages run in a worker thread so the event loop
(and a TUI on it) stays responsive, and their events are handed back to the loop in order.
Cancelling the task that runs ``ask`` stops it at the next await; work in a thread is told
through a ``cancel.StopFlag`` that its stages check between small steps, and the task ends
only once that thread has, so the next question never runs beside a stale one. Generation
stops at its next token. Rounds and queries are bounded, so it always ends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, TypeVar

from htmlrag_chat.agent.answer import Answer, numbered_sources
from htmlrag_chat.agent.plan import Plan, parse_missing, parse_plan
from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.cancel import StopFlag, watching
from htmlrag_chat.counting import TokenCounter
from htmlrag_chat.events import (
    Event,
    EventSink,
    Notice,
    Progress,
    ReaderBusy,
    Searching,
    Skipped,
    SourcesReady,
    StageFinished,
    ignore,
    stage,
)
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.prompts import load_prompt
from htmlrag_chat.reader import ChatModel, Message, Source, Turn
from htmlrag_chat.reader.citations import (
    check_citations,
    cites_any,
    flag_lines,
)
from htmlrag_chat.reader.layout import check_messages, rewrite_messages
from htmlrag_chat.recorder import MissingFromRecording, WebRecorder
from htmlrag_chat.settings.tree import default
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from htmlrag_chat.web.search import SearchError

T = TypeVar("T")
PLAN_TOKENS = 96
CHECK_TOKENS = 48
UNCITED = "the answer cites none of its sources: it may not come from them"


@dataclass
class Agent:
    web: WebRecorder
    reader: Reader
    stages: Sequence[Stage]
    counter: TokenCounter
    emit: EventSink = ignore
    rounds: int = default("research.rounds")  # a second round only when sources are missing
    max_queries: int = default("research.max_queries")  # sub-queries included
    max_pages: int = default("research.pages")  # pages per round
    deadline: float | None = default("web.deadline")  # seconds after the first page
    rendering: str = default("prune.render")  # how the reader gets the pages (``counter``'s)
    _worker: asyncio.Future[Any] | None = field(default=None, init=False, repr=False)

    async def ask(self, message: str, history: Sequence[Turn] = ()) -> Answer:
        if self._worker is not None:  # a stopped question's thread that has not ended yet
            await asyncio.wait([self._worker])
        start = time.perf_counter()
        timings: dict[str, float] = {}
        emit = self._recording(timings)
        plan = await self._plan(message, history, emit)
        sources, queries, rounds = [], [], 0
        if plan.search:
            # A follow-up's own words lack its subject: prune and judge by the rewrite.
            topic = " ".join(plan.queries) if history else message
            why = (
                "as typed"
                if plan.queries == (message,)
                else "rewritten"
                if history
                else "sub-queries"
            )
            sources, queries, rounds = await self._research(
                message, history, topic, plan, why, emit
            )
        if history and not sources:
            if plan.search:
                emit(Notice("no new sources: answering from the previous answer's sources"))
            sources = list(history[-1].sources)
            emit(SourcesReady(tuple(sources)))
        text, markdown, first_token, removed = await read_answer(
            self.reader, message, sources, history, emit, start
        )
        with stage(emit, "cite") as counts:
            citations = check_citations(markdown, sources)
            flags = flag_lines(citations)
            counts.update(citations=len(citations), unsupported=len(flags), removed=removed)
            if sources and not cites_any(citations):
                flags.append(UNCITED)
        return Answer(
            question=message,
            text=text,
            reader=self.reader.kind,
            model=self.reader.name,
            sources=sources,
            citations=citations,
            removed_citations=removed,
            flags=flags,
            queries=queries,
            rounds=rounds,
            timings=timings,
            first_token_ms=first_token,
            total_ms=(time.perf_counter() - start) * 1000,
            markdown=markdown,
        )

    # -- context without an answer (the MCP server's tools: the caller is the reader)

    async def search_context(self, query: str) -> list[Source]:
        """``query`` searched as typed, its pages fetched, cleaned and pruned: one round,
        no plan, no sufficiency check, no reading."""
        emit = self._recording({})
        sources, _, _ = await self._research(query, (), query, Plan((query,)), "as typed", emit)
        return sources

    async def page_context(self, url: str, query: str) -> list[Source]:
        """The page at ``url`` (fetched through the guard, or replayed) pruned for ``query``."""
        emit = self._recording({})
        pages = await self._fetch([url], emit)
        if not pages:
            return []
        return await self._in_thread(emit, self._prune, query, pages, {})

    # -- planning

    async def _plan(self, message: str, history: Sequence[Turn], emit: EventSink) -> Plan:
        """The first message is searched as typed, plus sub-queries when the model splits it
        into several; a follow-up is rewritten with the history (or needs no search)."""
        chat = self.reader.chat
        if chat is None:
            return Plan((message,))
        with stage(emit, "plan") as counts:
            messages = rewrite_messages(message, history, self.max_queries)
            reply = await _complete(chat, messages, PLAN_TOKENS, emit)
            request = load_prompt("rewrite").format(message="", max_queries="")
            plan = parse_plan(reply, self.max_queries, request)
            counts["queries"] = len(plan.queries) if plan else 0
        if not history:
            # One query back is a rephrasing of the question: the message as typed is better.
            extra = plan.queries if plan and len(plan.queries) > 1 else ()
            queries = _unique([message, *extra])[: self.max_queries]
            return Plan(tuple(queries))
        if plan is None:
            emit(Notice("the query rewrite could not be read: searching the message as typed"))
            return Plan((message,))
        return plan

    # -- search rounds

    async def _research(
        self,
        message: str,
        history: Sequence[Turn],
        topic: str,
        plan: Plan,
        why: str,
        emit: EventSink,
    ) -> tuple[list[Source], list[str], int]:
        """Search rounds until the sources suffice or the rounds run out; ``topic`` is what
        pages are pruned for and the sufficiency check asks about."""
        pages: dict[str, FetchResult] = {}
        titles: dict[str, str] = {}
        tried: set[str] = set()
        queries: list[str] = []
        pending = plan.queries
        sources: list[Source] = []
        for number in range(1, self.rounds + 1):
            emit(Searching(number, pending, why))
            queries.extend(pending)
            results = await self._search(pending, emit)
            titles.update({r.url: r.title for r in results})
            urls = [r.url for r in results if r.url not in tried][: self.max_pages]
            tried.update(urls)
            for result in await self._fetch(urls, emit):
                pages[result.url] = result
            sources = await self._in_thread(emit, self._prune, topic, list(pages.values()), titles)
            if sources:
                emit(SourcesReady(tuple(sources)))
            # A follow-up that found nothing new answers from the sources it already has:
            # checking "no sources" would cost a prefill and push them out of the cache.
            if number == self.rounds or self.reader.chat is None or (history and not sources):
                return sources, queries, number
            missing = await self._missing(message, history, topic, sources, emit)
            if missing is None or missing.casefold() in {q.casefold() for q in queries}:
                return sources, queries, number
            pending, why = (missing,), f"missing: {missing}"
        return sources, queries, self.rounds

    async def _search(self, queries: Sequence[str], emit: EventSink) -> list[SearchResult]:
        """Results of every query, interleaved so that each query's best come first; a query
        missing from a replay is skipped, and so is a failed search while another worked.
        When every search failed, the failure is raised, not also reported as skipped: each
        failure is said once."""
        per_query: list[list[SearchResult]] = []
        per_query_limit = -(-self.max_pages // len(queries))  # each query gets its share
        failures: list[tuple[str, SearchError]] = []
        with stage(emit, "search", len(queries)) as counts:
            for query in queries:
                try:
                    per_query.append((await self.web.search(query))[:per_query_limit])
                except MissingFromRecording as missing:
                    emit(Skipped(query, str(missing), kind="query"))
                except SearchError as failure:
                    failures.append((query, failure))
            results = _interleave(per_query)
            counts.update(queries=len(queries), results=len(results))
        if failures and not per_query:
            raise failures[0][1]
        for query, failure in failures:
            emit(Skipped(query, str(failure), kind="query"))
        return results

    async def _fetch(self, urls: list[str], emit: EventSink) -> list[FetchResult]:
        done = failed = 0
        seen: set[str] = set()

        def progress(result: FetchResult) -> None:
            nonlocal done, failed
            seen.add(result.url)
            done += 1
            if result.outcome is not Outcome.OK:
                failed += 1
                emit(Skipped(result.url, result.reason or result.outcome.value))
            emit(Progress("fetch", done, len(urls), failed))

        with stage(emit, "fetch", len(urls)) as counts:
            results = await self.web.fetch_many(urls, progress, self.deadline) if urls else []
            late = [result for result in results if result.url not in seen]
            for result in late:
                emit(Skipped(result.url, result.reason or result.outcome.value))
            counts.update(pages=done - failed, failed=failed)
            if late:
                counts["left_out"] = len(late)
        return [result for result in results if result.outcome is Outcome.OK]

    def _prune(
        self, question: str, pages: list[FetchResult], titles: dict[str, str], emit: EventSink
    ) -> list[Source]:
        """Clean and prune every page found so far into numbered sources (thread side)."""
        inputs = [PageInput(p.url, p.body or b"", p.charset) for p in pages]
        loaded = load_pages(inputs, emit)
        for failure in loaded.failures:
            emit(Notice(f"page not used: {failure}"))
        if not loaded.document.pages:
            return []
        results = prune_document(loaded.document, question, self.stages, self.counter, emit)
        sources = numbered_sources(results[-1].result.document, titles, self.rendering)
        if not sources and visible_text(loaded.document.root):
            budget = self.stages[-1].budget
            emit(Notice(f"no block of the pages fits in the budget of {budget} tokens: no sources"))
        return sources

    async def _missing(
        self,
        message: str,
        history: Sequence[Turn],
        topic: str,
        sources: list[Source],
        emit: EventSink,
    ) -> str | None:
        """The sufficiency check, laid out as the answer's prompt plus its instruction, so
        the answer that follows reuses the check's prefill."""
        chat = self.reader.chat
        assert chat is not None
        with stage(emit, "check") as counts:
            messages = check_messages(message, sources, history, topic)
            reply = await _complete(chat, messages, CHECK_TOKENS, emit)
            missing = parse_missing(reply, load_prompt("sufficiency").format(topic=""))
            counts["enough"] = int(missing is None)
        return missing

    # -- plumbing

    def _recording(self, timings: dict[str, float]) -> EventSink:
        def emit(event: Event) -> None:
            if isinstance(event, StageFinished):
                timings[event.stage] = timings.get(event.stage, 0.0) + event.ms
            self.emit(event)

        return emit

    async def _in_thread(self, emit: EventSink, work: Callable[..., T], *args: object) -> T:
        """Run ``work(*args, emit)`` in a thread, its events delivered on the loop in order.

        A cancelled question sets the thread's stop flag, which its stages check between
        small steps (``cancel``), and waits for the thread to end before the cancellation
        goes on: the next question must not share the CPU, or the cache, with a stale one."""
        loop = asyncio.get_running_loop()
        flag = StopFlag()

        def thread_emit(event: Event) -> None:
            flag.check()
            loop.call_soon_threadsafe(emit, event)

        def run() -> T:
            with watching(flag):
                return work(*args, thread_emit)

        worker = self._worker = asyncio.ensure_future(asyncio.to_thread(run))
        # A stopped thread ends with Cancelled, which nobody awaits: mark it as seen.
        worker.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            flag.set()
            # Its next check is a fraction of a second away. Waited for through repeated
            # cancellations too: an anyio cancel scope (the MCP server's calls run in one)
            # cancels the task again on every turn of the loop until it has left the scope.
            while not worker.done():
                with suppress(asyncio.CancelledError):
                    await asyncio.wait([worker])
            raise
        finally:
            if worker.done():
                self._worker = None


async def _complete(
    chat: ChatModel, messages: list[Message], max_tokens: int, emit: EventSink
) -> str:
    """A whole reply (a plan or a check), saying first how much the reader must prefill."""
    emit(ReaderBusy("prefill", chat.pending_tokens(messages)))
    return "".join([chunk async for chunk in chat.stream(messages, max_tokens)])


def _interleave(lists: Sequence[Sequence[SearchResult]]) -> list[SearchResult]:
    seen: set[str] = set()
    merged = []
    for rank in range(max(map(len, lists), default=0)):
        for results in lists:
            if rank < len(results) and results[rank].url not in seen:
                seen.add(results[rank].url)
                merged.append(results[rank])
    return merged


def _unique(queries: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    unique = []
    for query in queries:
        if query.casefold() not in seen:
            seen.add(query.casefold())
            unique.append(query)
    return unique
