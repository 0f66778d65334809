"""The question loop: plan -> search -> fetch -> clean and prune -> (enough?) -> read -> check.

The user's own documents (``library.DocumentLibrary``) are a source beside the web: each
round they are asked for the round's queries before the web is, and what they give joins
the pages in the same pruning; with ``search_web`` off they are the only source.

Every stage reports typed events; CPU-heavy stages run in a worker thread so the event loop
(and a TUI on it) stays responsive, and their events are handed back to the loop in order
(``agent/worker.py``). Cancelling the task that runs ``ask`` stops it at the next await, a
thread at its next check, and the task ends only once that thread has, so the next question
never runs beside a stale one. Generation stops at its next token. Rounds and queries are
bounded, so it always ends. What a question did (sources, queries run and skipped, pages
left out, timings, notices) is kept in its ``Research`` record as it goes and returned,
so that no face has to rebuild it from the events.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from htmlrag_chat.agent.answer import Answer, numbered_sources
from htmlrag_chat.agent.checking import Checker
from htmlrag_chat.agent.plan import Plan, parse_missing, parse_plan
from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.agent.research import Dropped, Research
from htmlrag_chat.agent.worker import Worker
from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.events import (
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
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.evidence.words import flag_lines
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.reader import ChatModel, Message, Source, Turn
from htmlrag_chat.reader.layout import check_messages, rewrite_messages
from htmlrag_chat.recorder import MissingFromRecording, WebRecorder
from htmlrag_chat.settings.tree import default
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult, interleave
from htmlrag_chat.web.search import SearchError
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:
    from htmlrag_chat.library import DocumentLibrary

PLAN_TOKENS = 96
CHECK_TOKENS = 48


@dataclass
class Agent:
    """The question loop on its parts. Each question (or context call) fills in a
    ``Research`` record from its own stages and from every event they emit, the searcher's
    included, and returns it: the faces read that, and show the events only as progress."""

    web: WebRecorder
    reader: Reader
    stages: Sequence[Stage]
    counter: TokenCounter
    emit: EventSink = ignore
    rounds: int = default("research.rounds")  # a second round only when sources are missing
    max_queries: int = default("research.max_queries")  # sub-queries included
    max_pages: int = default("research.pages")  # pages per round
    deadline: float | None = default("web.deadline")  # seconds after the first page
    # The user's own documents (``--docs``), a source beside the web; ``search_web`` False
    # (``--no-web``): they are all there is, and nothing touches the network.
    documents: DocumentLibrary | None = None
    search_web: bool = default("research.web")
    rendering: str = default("prune.render")  # how the reader gets the pages (``counter``'s)
    checker: Checker = field(default_factory=Checker)  # after the answer: check, judge, correct
    _worker: Worker = field(default_factory=Worker, init=False, repr=False)
    _run: Research = field(default_factory=Research, init=False, repr=False)

    def __post_init__(self) -> None:
        # The searcher's notices (a backend handing over) belong to the question's record.
        self.web = replace(self.web, searcher=replace(self.web.searcher, emit=self._emit))

    def search_with(self, settings: SearchSettings) -> None:
        """Search with ``settings`` from the next question on (the chat app's palette); the
        reader and the pruning models stay as they are."""
        if settings != self.web.searcher.settings:
            self.web.searcher = replace(self.web.searcher, settings=settings)

    async def ask(
        self, message: str, history: Sequence[Turn] = (), queries: Sequence[str] = ()
    ) -> Answer:
        """``message`` answered from the sources its searches find. ``queries``: searched
        as given instead of planned (a research part, which already is one question)."""
        run = await self._start()
        start = time.perf_counter()
        emit = self._emit
        plan = Plan(tuple(queries)) if queries else await self._plan(message, history)
        # A follow-up's own words lack its subject: prune, judge and check by the rewrite,
        # or, answered from the previous sources ("shorter please"), by the question before.
        topic = message
        if history:
            topic = " ".join(plan.queries) if plan.search else f"{history[-1].question} {message}"
        if plan.search:
            typed = plan.queries == (message,)
            why = "as typed" if typed else ("rewritten" if history else "sub-queries")
            await self._research(message, history, topic, plan, why, self.rounds)
            unrecorded = bool(run.queries) and set(run.unrecorded) >= set(run.queries)
            if unrecorded and not (history or run.sources):
                # Nothing to read from: stopped before the reader, so no answer-shaped reply
                # says "the sources do not say". (No block fitting the budget is an answer.)
                raise MissingFromRecording(
                    "none of the searches is in the recording, so there are no sources"
                )
        sources = run.sources
        if history and not sources:
            if plan.search:
                emit(Notice("no new sources: answering from the previous answer's sources"))
            sources = list(history[-1].sources)
            emit(SourcesReady(tuple(sources)))
        text, markdown, first_token, removed = await read_answer(
            self.reader, message, sources, history, emit, start
        )
        # After the last token: the check never delays the answer.
        checked = await self.checker.check(
            self._worker, emit, message, topic, sources, history, text, markdown
        )
        claims = checked.claims
        return Answer(
            question=message,
            text=checked.text,
            written=text if checked.text != text else "",
            reader=self.reader.kind,
            model=self.reader.name,
            sources=sources,
            claims=claims,
            removed_citations=removed,
            flags=flag_lines(claims),
            queries=run.queries,
            rounds=run.rounds,
            timings=run.timings,
            first_token_ms=first_token,
            total_ms=(time.perf_counter() - start) * 1000,
            markdown=checked.markdown,
            skipped=run.skipped,
            left_out=run.left_out,
            notes=run.notes,
        )

    # -- context without an answer (the MCP server's tools: the caller is the reader)

    async def search_context(self, query: str) -> Research:
        """``query`` searched as typed, its pages fetched, cleaned and pruned: one round
        whatever ``rounds`` says, no plan, no sufficiency check, no reading: no LLM call."""
        run = await self._start()
        await self._research(query, (), query, Plan((query,)), "as typed", rounds=1)
        return run

    async def page_context(self, url: str, query: str) -> Research:
        """The page at ``url`` (fetched through the guard, or replayed) pruned for ``query``."""
        run = await self._start()
        fetched = await self._fetch([url])
        failures = {result.url: _failure(result) for result in fetched if not _ok(result)}
        pages = [_page_input(result) for result in fetched if _ok(result)]
        if pages:
            run.sources, unusable = await self._worker.run(
                self._emit, self._prune, query, pages, {}
            )
            failures.update(unusable)
        run.leave_out([url], failures)
        return run

    # -- planning

    async def _plan(self, message: str, history: Sequence[Turn]) -> Plan:
        """The first message is searched as typed, plus sub-queries when the model splits it
        into several; a follow-up is rewritten with the history (or needs no search)."""
        chat, emit = self.reader.chat, self._emit
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
        rounds: int,
    ) -> None:
        """Search rounds until the sources suffice or ``rounds`` run out, into the
        question's record; ``topic`` is what pages are pruned for and the sufficiency
        check asks about."""
        run, emit = self._run, self._emit
        pages: dict[str, FetchResult] = {}
        documents: dict[str, PageInput] = {}
        titles: dict[str, str] = {}
        tried: dict[str, None] = {}  # every URL fetched, in order
        failures: dict[str, str] = {}  # why a page could not be used
        pending = plan.queries
        for number in range(1, rounds + 1):
            run.rounds = number
            emit(Searching(number, pending, why))
            run.queries.extend(pending)
            if self.documents is not None:
                found = await self._worker.run(emit, self.documents.find, pending, self.max_pages)
                documents.update((document.source, document) for document in found)
            if self.search_web:
                results = await self._search(pending)
                titles.update({r.url: r.title for r in results})
                urls = [r.url for r in results if r.url not in tried][: self.max_pages]
                tried.update(dict.fromkeys(urls))
                for result in await self._fetch(urls):
                    if _ok(result):
                        pages[result.url] = result
                    else:
                        failures[result.url] = _failure(result)
            inputs = [*documents.values(), *map(_page_input, pages.values())]
            run.sources, unusable = await self._worker.run(emit, self._prune, topic, inputs, titles)
            failures.update(unusable)
            run.leave_out(tried, failures)
            if run.sources:
                emit(SourcesReady(tuple(run.sources)))
            # A follow-up that found nothing new answers from the sources it already has:
            # checking "no sources" would cost a prefill and push them out of the cache.
            if number == rounds or self.reader.chat is None or (history and not run.sources):
                return
            missing = await self._missing(message, history, topic, run.sources)
            if missing is None or missing.casefold() in {q.casefold() for q in run.queries}:
                return
            pending, why = (missing,), f"missing: {missing}"

    async def _search(self, queries: Sequence[str]) -> list[SearchResult]:
        """Results of every query, interleaved so that each query's best come first; a query
        missing from a replay is skipped, and so is a failed search while another worked.
        When every search failed, the failure is raised, not also reported as skipped: each
        failure is said once."""
        per_query: list[list[SearchResult]] = []
        per_query_limit = -(-self.max_pages // len(queries))  # each query gets its share
        skipped: list[Dropped] = []
        failures: list[SearchError] = []
        with stage(self._emit, "search", len(queries)) as counts:
            for query in queries:
                try:
                    per_query.append((await self.web.search(query))[:per_query_limit])
                except MissingFromRecording as missing:
                    skipped.append(Dropped(query, str(missing)))
                    self._run.unrecorded.append(query)
                except SearchError as failure:
                    skipped.append(Dropped(query, str(failure)))
                    failures.append(failure)
            results = interleave(per_query)
            counts.update(queries=len(queries), results=len(results))
        if failures and not per_query:
            raise failures[0]
        for dropped in skipped:
            self._run.skipped.append(dropped)
            self._emit(Skipped(dropped.what, dropped.reason, kind="query"))
        return results

    async def _fetch(self, urls: list[str]) -> list[FetchResult]:
        """Every URL's result, in order (failed ones too), each failure said as it comes."""
        emit = self._emit
        done = failed = 0
        seen: set[str] = set()

        def progress(result: FetchResult) -> None:
            nonlocal done, failed
            seen.add(result.url)
            done += 1
            if not _ok(result):
                failed += 1
                emit(Skipped(result.url, _failure(result)))
            emit(Progress("fetch", done, len(urls), failed))

        with stage(emit, "fetch", len(urls)) as counts:
            results = await self.web.fetch_many(urls, progress, self.deadline) if urls else []
            late = [result for result in results if result.url not in seen]
            for result in late:
                emit(Skipped(result.url, _failure(result)))
            counts.update(pages=done - failed, failed=failed)
            if late:
                counts["left_out"] = len(late)
        return results

    def _prune(
        self, question: str, inputs: list[PageInput], titles: dict[str, str], emit: EventSink
    ) -> tuple[list[Source], dict[str, str]]:
        """Clean and prune every page and document found so far into numbered sources, the
        documents first (thread side); also the inputs that could not be cleaned, and why."""
        loaded = load_pages(inputs, emit)
        unusable = {}
        for url, failure in loaded.failures.items():
            emit(Notice(f"page not used: {failure}"))
            unusable[url] = str(failure).removeprefix(f"{url}: ")
        if not loaded.document.pages:
            return [], unusable
        results = prune_document(loaded.document, question, self.stages, self.counter, emit)
        sources = numbered_sources(results[-1].result.document, titles, self.rendering)
        if not sources and visible_text(loaded.document.root):
            budget = self.stages[-1].budget
            emit(Notice(f"no block of the pages fits in the budget of {budget} tokens: no sources"))
        return sources, unusable

    async def _missing(
        self,
        message: str,
        history: Sequence[Turn],
        topic: str,
        sources: list[Source],
    ) -> str | None:
        """The sufficiency check, laid out as the answer's prompt plus its instruction, so
        the answer that follows reuses the check's prefill."""
        chat = self.reader.chat
        assert chat is not None
        with stage(self._emit, "check") as counts:
            messages = check_messages(message, sources, history, topic)
            reply = await _complete(chat, messages, CHECK_TOKENS, self._emit)
            missing = parse_missing(reply, load_prompt("sufficiency").format(topic=""))
            counts["enough"] = int(missing is None)
        return missing

    # -- plumbing

    async def _start(self) -> Research:
        """A new record for the next question, once a stopped one's thread has ended (its
        last events land in its own record, not in this one)."""
        await self._worker.idle()
        self._run = Research()
        return self._run

    def _emit(self, event: Event) -> None:
        """Every event of the question: timings and notices into its record, then on to
        the face's sink as progress."""
        if isinstance(event, StageFinished):
            timings = self._run.timings
            timings[event.stage] = timings.get(event.stage, 0.0) + event.ms
        elif isinstance(event, Notice):
            self._run.note(event.message)
        self.emit(event)


def _ok(result: FetchResult) -> bool:
    return result.outcome is Outcome.OK


def _failure(result: FetchResult) -> str:
    """Why a download gave no page, in words."""
    return result.reason or result.outcome.value


async def _complete(
    chat: ChatModel, messages: list[Message], max_tokens: int, emit: EventSink
) -> str:
    """A whole reply (a plan or a check), saying first how much the reader must prefill."""
    emit(ReaderBusy("prefill", chat.pending_tokens(messages)))
    return "".join([chunk async for chunk in chat.stream(messages, max_tokens)])


def _page_input(page: FetchResult) -> PageInput:
    return PageInput(page.url, page.body or b"", page.charset)


def _unique(queries: Sequence[str]) -> list[str]:
    seen: set[str] = set()
    unique = []
    for query in queries:
        if query.casefold() not in seen:
            seen.add(query.casefold())
            unique.append(query)
    return unique
