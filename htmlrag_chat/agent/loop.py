"""The question loop: search -> fetch -> clean and prune -> (enough?) -> read -> check.

A first question is searched as typed at once, its plan (sub-queries for a comparison)
running beside that search when the reader would be idle (``agent/planning.py``); a
follow-up is rewritten first, since its words lack their subject.

Pages come from the agent's sources (``sources/source.py``: the web, the user's documents,
saved pages), each asked in turn for a round's queries; what they give is pruned as one
document (``agent/rounds.py``). ``--no-web`` is the list without the web.

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
from dataclasses import dataclass, field
from functools import partial

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.checking import Checker
from htmlrag_chat.agent.plan import Plan, check_settled, parse_missing
from htmlrag_chat.agent.planning import CHECK_TOKENS, SidePlan, complete, rewrite
from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.agent.rounds import Pruning, Rounds
from htmlrag_chat.agent.worker import Worker
from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.events import (
    Event,
    EventSink,
    Notice,
    SourcesReady,
    StageFinished,
    ignore,
    stage,
)
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.evidence.words import flag_lines
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.reader import Source, Turn
from htmlrag_chat.reader.layout import check_messages
from htmlrag_chat.settings.tree import default
from htmlrag_chat.sources.recorder import MissingFromRecording
from htmlrag_chat.sources.source import Asking, PageSource
from htmlrag_chat.web.settings import SearchSettings


@dataclass
class Agent:
    """The question loop on its parts. Each question (or context call) fills in a
    ``Research`` record from its own stages and from every event they emit, the searcher's
    included, and returns it: the faces read that, and show the events only as progress."""

    sources: Sequence[PageSource]  # asked in this order, each round: the user's own first
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
    rendering: str = default("prune.render")  # how the reader gets the pages (``counter``'s)
    checker: Checker = field(default_factory=Checker)  # after the answer: check, judge, correct
    _worker: Worker = field(default_factory=Worker, init=False, repr=False)
    _run: Research = field(default_factory=Research, init=False, repr=False)

    def search_with(self, settings: SearchSettings) -> None:
        """Search with ``settings`` from the next question on (the chat app's palette); the
        reader and the pruning models stay as they are."""
        for source in self.sources:
            source.search_with(settings)

    async def settle(self, timeout: float) -> int:
        """Give the downloads a deadline left behind up to ``timeout`` seconds to land in
        the cache (before the program exits); how many pages were still missing then."""
        return sum([await source.settle(timeout) for source in self.sources])

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
                rounds = self._rounds(message, history, topic)
                await rounds.search(topic, plan, why, self.rounds, side, follow_up=bool(history))
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
        if history and not run.sources:
            if plan.search:
                emit(Notice("no new sources: answering from the previous answer's sources"))
            run.sources = list(history[-1].sources)
            emit(SourcesReady(tuple(run.sources)))
        sources = run.sources
        text, markdown, first_token, removed = await read_answer(
            self.reader, message, sources, history, emit, start
        )
        # After the last token: the check never delays the answer.
        checked = await self.checker.check(
            self._worker, emit, message, topic, sources, history, text, markdown
        )
        return Answer(
            question=message,
            text=checked.text,
            written=text if checked.text != text else "",
            reader=self.reader.kind,
            model=self.reader.name,
            claims=checked.claims,
            removed_citations=removed,
            flags=flag_lines(checked.claims),
            research=run,
            first_token_ms=first_token,
            total_ms=(time.perf_counter() - start) * 1000,
            markdown=checked.markdown,
        )

    # -- context without an answer (the MCP server's tools: the caller is the reader)

    async def search_context(self, query: str) -> Research:
        """``query`` searched as typed, its pages fetched, cleaned and pruned: one round
        whatever ``rounds`` says, no plan, no sufficiency check, no reading: no LLM call."""
        run = await self._start()
        await self._rounds(query, (), query).search(query, Plan((query,)), "as typed", 1)
        return run

    async def page_context(self, url: str, query: str) -> Research:
        """The page at ``url`` (fetched through the guard, or replayed) pruned for ``query``,
        by the first source that fetches a page by its address."""
        run = await self._start()
        for source in self.sources:
            found = await source.page(url, self._asking())
            if found is not None:
                await self._rounds(query, (), query).pruned(query, [found])
                break
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

    def _asking(self) -> Asking:
        """The question as its sources see it."""
        alone = len(self.sources) == 1
        thread = partial(self._worker.run, self._emit)
        return Asking(self._emit, self.max_pages, self.deadline, alone, thread)

    def _rounds(self, message: str, history: Sequence[Turn], topic: str) -> Rounds:
        """The question's rounds on every source, pruning for ``topic``; the sufficiency
        check asks about ``topic`` when there is a reader to ask."""
        asking = self._asking()
        gatherings = [source.gather(asking) for source in self.sources]
        pruning = Pruning(self.stages, self.counter, self.rendering)
        check = None
        if self.reader.chat is not None:
            check = partial(self._missing, message, history, topic)
        return Rounds(gatherings, pruning, self._worker, self._run, self._emit, check)

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
