"""The question loop: search -> fetch -> clean and prune -> (enough?) -> read -> check.

A first question is searched as typed at once, its plan (sub-queries for a comparison)
running beside that search when the reader would be idle (``agent/planning.py``); a
follow-up is rewritten first, since its words lack their subject.

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
from htmlrag_chat.agent.gathering import Gathering, Round, failure, ok, page_input
from htmlrag_chat.agent.plan import Plan, check_settled, parse_missing
from htmlrag_chat.agent.planning import CHECK_TOKENS, SidePlan, complete, rewrite
from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.agent.worker import Worker
from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.events import (
    Event,
    EventSink,
    Notice,
    Searching,
    SourcesReady,
    StageFinished,
    ignore,
    stage,
)
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.evidence.words import flag_lines
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.reader import Source, Turn
from htmlrag_chat.reader.layout import check_messages
from htmlrag_chat.recorder import MissingFromRecording, WebRecorder
from htmlrag_chat.settings.tree import default
from htmlrag_chat.web.results import FetchResult
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:
    from htmlrag_chat.library import DocumentLibrary


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
    # Whether a first question's plan runs beside its search (its sub-queries join when
    # they can still help); False where the plan would only take the reader's CPU.
    plan_first: bool = True
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
        side = None
        if queries:  # a research's part: one question already, searched as given
            plan, topic = Plan(tuple(queries)), message
            why = "as typed" if plan.queries == (message,) else "sub-queries"
        elif history:
            plan = await self._rewrite(message, history)
            # A follow-up's own words lack its subject: prune, judge and check by the
            # rewrite, or, answered from the previous sources ("shorter please"), by the
            # question before.
            topic = " ".join(plan.queries) if plan.search else f"{history[-1].question} {message}"
            why = "as typed" if plan.queries == (message,) else "rewritten"
        else:
            plan, topic, why = Plan((message,)), message, "as typed"
            side = self._side_plan(message)
        if plan.search:
            try:
                await self._research(message, history, topic, plan, why, self.rounds, side)
            finally:
                if side is not None:
                    await side.stop()
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
        fetched = await self._gathering().fetch([url])
        failures = {result.url: failure(result) for result in fetched if not ok(result)}
        pages = [page_input(result) for result in fetched if ok(result)]
        if pages:
            run.sources, unusable = await self._worker.run(
                self._emit, self._prune, query, pages, {}
            )
            failures.update(unusable)
        run.leave_out([url], failures)
        return run

    # -- planning

    def _side_plan(self, message: str) -> SidePlan | None:
        """A first message's plan, started beside its search; none when it cannot add a
        query (one allowed, or no LLM) or is not wanted (``plan_first``)."""
        chat = self.reader.chat
        if chat is None or self.max_queries < 2 or not self.plan_first:
            return None
        return SidePlan.start(chat, message, self.max_queries, self._emit)

    async def _rewrite(self, message: str, history: Sequence[Turn]) -> Plan:
        """A follow-up rewritten with the history into standalone queries (or no search)."""
        chat = self.reader.chat
        if chat is None:
            return Plan((message,))
        plan = await rewrite(chat, message, history, self.max_queries, self._emit)
        if plan is None:
            self._emit(
                Notice("the query rewrite could not be read: searching the message as typed")
            )
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
        side: SidePlan | None = None,
    ) -> None:
        """Search rounds until the sources suffice or ``rounds`` run out, into the
        question's record; ``topic`` is what pages are pruned for and the sufficiency
        check asks about. ``side``: the plan beside the first round, whose queries join
        it if they come by the time its pages are in; else it is stopped there."""
        run, emit = self._run, self._emit
        pages: dict[str, FetchResult] = {}
        documents: dict[str, PageInput] = {}
        titles: dict[str, str] = {}
        tried: dict[str, None] = {}  # every URL fetched, in order
        failures: dict[str, str] = {}  # why a page could not be used
        pending = plan.queries
        for number in range(1, rounds + 1):
            run.rounds = number
            found = Round(self.max_pages, list(tried))
            await self._look(number, pending, why, found, documents)
            if side is not None and number == 1:
                joining = side.in_time()
                await side.stop()  # a plan that has not replied yet would only delay
                if joining:  # it replied while the question's own pages came in
                    await self._look(number, joining, "sub-queries", found, documents)
            titles.update(found.titles)
            tried.update(dict.fromkeys(found.urls()))
            pages.update((url, page) for url, page in found.pages.items() if url in tried)
            failures.update(found.failures)
            inputs = [*documents.values(), *map(page_input, pages.values())]
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

    async def _look(
        self,
        number: int,
        queries: Sequence[str],
        why: str,
        found: Round,
        documents: dict[str, PageInput],
    ) -> None:
        """A round's ``queries`` asked of the documents and the web, their pages fetched
        into ``found``."""
        self._emit(Searching(number, tuple(queries), why))
        self._run.queries.extend(queries)
        if self.documents is not None:
            matched = await self._worker.run(
                self._emit, self.documents.find, queries, self.max_pages
            )
            documents.update((document.source, document) for document in matched)
        if self.search_web:
            await found.take(self._gathering(), queries)

    def _prune(
        self, question: str, inputs: list[PageInput], titles: dict[str, str], emit: EventSink
    ) -> tuple[list[Source], dict[str, str]]:
        """Clean and prune every page and document found so far into numbered sources, the
        documents first (thread side); also the inputs that could not be cleaned, and why."""
        loaded = load_pages(inputs, emit)
        unusable = {}
        for url, problem in loaded.failures.items():
            emit(Notice(f"page not used: {problem}"))
            unusable[url] = str(problem).removeprefix(f"{url}: ")
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
            reply = await complete(chat, messages, CHECK_TOKENS, self._emit, check_settled)
            missing = parse_missing(reply, load_prompt("sufficiency").format(topic=""))
            counts["enough"] = int(missing is None)
        return missing

    # -- plumbing

    def _gathering(self) -> Gathering:
        return Gathering(
            self.web, self._run, self._emit, self.deadline, documents=self.documents is not None
        )

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
