"""A research run: the question split, each part asked of the agent in turn, one report.

Each part is one question to the agent (``Agent.ask`` with the part as its query: no plan of
its own, since it already is one question), so it gets what every ``ask`` gets: the same
sources, filters, cache and replay, its own search rounds, its pages pruned to the budget
for it alone, and its answer checked, judged and corrected. Parts run one after the other:
on a CPU the reader is the wait, and two at once would only share it.

Each part is kept as soon as it is answered (``kept.py``), so a rerun asks only what is
missing. A stop (Esc, Ctrl+C: the task is cancelled) ends the part running at its next await,
as it ends a question; ``report()`` then still gives what is done, the rest marked stopped,
and the face shows and keeps that. A part whose searches are all missing from a replay, or
all failed, says so in its section and the others go on; anything else (the reader's server
gone) ends the research with its one line, the parts done kept for the rerun.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from htmlrag_chat.base.events import (
    BY_READER,
    GIVEN,
    WRITTEN,
    EventSink,
    PartEnded,
    PartsPlanned,
    PartStarted,
    stage,
)
from htmlrag_chat.research.kept import (
    PART,
    SPLIT,
    ResearchCache,
    answer_record,
    kept_answer,
    part_key,
    split_key,
)
from htmlrag_chat.research.parts import (
    MAX_PARTS,
    distinct_parts,
    split_question,
    written_parts,
)
from htmlrag_chat.research.report import (
    ANSWERED,
    FAILED,
    NOTHING,
    STOPPED,
    PartResult,
    Report,
    Section,
)
from htmlrag_chat.sources.recorder import MissingFromRecording
from htmlrag_chat.web.search import SearchError

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.agent.loop import Agent

NO_SOURCES = "no page or document held anything for it"


@dataclass
class Researcher:
    """Runs researches on ``agent``, keeping parts in ``cache`` (None: nothing kept)."""

    agent: Agent
    cache: ResearchCache | None = None
    max_parts: int = MAX_PARTS
    clock: Callable[[], float] = time.perf_counter
    _question: str = field(default="", init=False, repr=False)
    _how: str = field(default=BY_READER, init=False, repr=False)
    _results: list[PartResult] = field(default_factory=list, init=False, repr=False)
    _start: float = field(default=0.0, init=False, repr=False)

    @property
    def emit(self) -> EventSink:
        return self.agent.emit

    async def run(self, question: str, given: Sequence[str] = ()) -> Report:
        """The report of ``question``, split into ``given`` parts or as the reader splits
        it. Cancelled, it raises as a question does; ``report()`` has what was done."""
        self._question, self._results = question, []
        self._start = self.clock()
        if given:
            parts, self._how = tuple(given), GIVEN
        else:
            parts, self._how = await self._split(question)
        self._results = [PartResult(n, part) for n, part in enumerate(parts, 1)]
        self.emit(PartsPlanned(parts, self._how))
        for result in self._results:
            await self._ask(result)
        return self.report()

    def report(self) -> Report:
        """The report of what is done so far: after a stop, the parts not done say so."""
        reader = self.agent.reader
        stopped = any(result.state == STOPPED for result in self._results)
        return Report.of(
            self._question, reader.kind, reader.name, self._results, self._how, stopped,
            (self.clock() - self._start) * 1000,
        )  # fmt: skip

    async def _split(self, question: str) -> tuple[tuple[str, ...], str]:
        """The question's own list of questions, else the reader's split, or the one it
        made for this question before; and how they were made."""
        reader = self.agent.reader
        if written := written_parts(question, self.max_parts):
            with stage(self.emit, "split") as counts:  # no reader call: nothing to keep
                counts["parts"] = len(written)
            return written, WRITTEN
        key = split_key(self.agent, question, self.max_parts)
        kept = self.cache.get(SPLIT, key) if self.cache is not None else None
        if isinstance(kept, list) and kept and all(isinstance(part, str) for part in kept):
            parts = distinct_parts(kept)[: self.max_parts]  # as this code reads a split
            return (parts if len(parts) > 1 else (question,)), BY_READER
        parts = await split_question(reader.chat, question, self.max_parts, self.emit)
        if self.cache is not None and reader.chat is not None:
            self.cache.put(SPLIT, key, list(parts))
        return parts, BY_READER

    async def _ask(self, result: PartResult) -> None:
        total = len(self._results)
        self.emit(PartStarted(result.number, total, result.part))
        key = await asyncio.to_thread(part_key, self.agent, result.part)
        kept = kept_answer(self.cache.get(PART, key)) if self.cache is not None else None
        if kept is not None:
            result.answer, result.state, result.cached = kept, ANSWERED, True
        else:
            await self._answer(result, key)
        section = Section(result.number, result.part, result.state, reason=result.reason)
        if result.answer is not None and result.state == ANSWERED:
            section.claims, section.sources = result.answer.claims, _numbers(result.answer)
        detail = section.summary()
        self.emit(PartEnded(result.number, total, result.state, result.cached, detail))

    async def _answer(self, result: PartResult, key: str) -> None:
        try:
            answer = await self.agent.ask(result.part, queries=(result.part,))
        except MissingFromRecording as missing:
            result.state, result.reason = NOTHING, str(missing)
            return
        except SearchError as failure:
            result.state, result.reason = FAILED, str(failure)
            return
        if not answer.sources:
            # Nothing to read from: the reader's "the sources do not say" is no finding.
            result.state, result.reason = NOTHING, NO_SOURCES
            return
        result.answer, result.state = answer, ANSWERED
        if self.cache is not None:
            self.cache.put(PART, key, answer_record(answer))


def _numbers(answer: Answer) -> tuple[int, ...]:
    return tuple(source.number for source in answer.sources)
