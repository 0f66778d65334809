"""A research end to end: a scripted reader on loopback, a replayed web in a real SQLite
store, real cleaning, BM25 pruning and evidence checks; the parts kept in the store."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.base.events import (
    BY_READER,
    GIVEN,
    WRITTEN,
    Event,
    PartEnded,
    PartsPlanned,
    PartStarted,
    Searching,
)
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.research.kept import ResearchCache
from htmlrag_chat.research.report import ANSWERED, NOTHING, STOPPED, Report
from htmlrag_chat.research.runner import NO_SOURCES, Researcher
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.store.db import Store
from tests.openai_server import ScriptedLLM, serve_llm
from tests.research.world import (
    HIVES,
    LAMP,
    NOWHERE,
    PARAFFIN,
    QUESTION,
    SWARM,
    Reader,
    agent,
    recorded,
    requests,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "c.db") as store:
        yield recorded(store)


def research(
    llm: ScriptedLLM,
    store: Store,
    given: tuple[str, ...] = (),
    events: list[Event] | None = None,
    stop_at: int | None = None,
    question: str = QUESTION,
    **options: Any,
) -> tuple[Report, list[Event]]:
    """One research against a fresh server; ``stop_at``: stopped (cancelled, as Ctrl+C
    does) as part ``stop_at`` starts, and the report of what was done."""
    events = [] if events is None else events

    async def main() -> Report:
        async with serve_llm(llm) as url:
            notes: list[str] = []
            cache = ResearchCache(store, notes.append)
            researcher = Researcher(agent(url, store, events, **options), cache)
            task = asyncio.current_task()
            assert task is not None

            def emit(event: Event) -> None:
                events.append(event)
                if isinstance(event, PartStarted) and event.number == stop_at:
                    task.cancel()

            researcher.agent.emit = emit
            try:
                return await researcher.run(question, given)
            except asyncio.CancelledError:
                return researcher.report()

    return asyncio.run(main()), events


def test_the_question_is_split_each_part_answered_and_the_citations_renumbered(
    store: Store,
) -> None:
    reader = Reader()
    llm = ScriptedLLM(reply=reader)
    report, events = research(llm, store)
    assert len(requests(llm, "split")) == 1
    assert [e for e in events if isinstance(e, PartsPlanned)] == [
        PartsPlanned((SWARM, PARAFFIN), BY_READER)
    ]
    # Each part searched as typed, on its own: its own round, its own pages.
    assert [e.queries for e in events if isinstance(e, Searching)] == [(SWARM,), (PARAFFIN,)]
    assert reader.asked == [SWARM, PARAFFIN]
    assert [s.state for s in report.sections] == [ANSWERED, ANSWERED]
    # One numbering: the pages in the order the report cites them, each once.
    urls = [source.url for source in report.references]
    assert urls[:2] == [HIVES, LAMP] and len(urls) == len(set(urls))
    first, second = report.sections
    assert first.text == "Orla Vance caught the swarm from the blue hive [1]."
    # Part 2 read the lamp page as its own [2]; the report calls it [2] too here, and every
    # claim and quote of it points at the reference that is the lamp page.
    assert second.text.endswith("[2].")
    [claim] = second.claims
    assert claim.cited == (2,) and claim.supported
    assert {report.references[q.source - 1].url for q in claim.backing} == {LAMP}
    assert report.short_answer() == [first.text, second.text]
    assert [e.state for e in events if isinstance(e, PartEnded)] == [ANSWERED, ANSWERED]


def test_a_question_written_as_a_list_of_questions_is_split_as_written(store: Store) -> None:
    reader = Reader()
    llm = ScriptedLLM(reply=reader)
    listed = f"{SWARM[:-1]}, and {PARAFFIN[0].lower()}{PARAFFIN[1:]}"
    report, events = research(llm, store, question=listed)
    assert requests(llm, "split") == []  # the writer's own split: no call, nothing dropped
    assert [e for e in events if isinstance(e, PartsPlanned)] == [
        PartsPlanned((SWARM, PARAFFIN), WRITTEN)
    ]
    assert reader.asked == [SWARM, PARAFFIN]
    assert [s.state for s in report.sections] == [ANSWERED, ANSWERED]


def test_a_part_already_answered_is_not_asked_again(store: Store) -> None:
    research(ScriptedLLM(reply=Reader()), store)
    reader = Reader()
    llm = ScriptedLLM(reply=reader)
    report, events = research(llm, store)
    assert llm.requests == []  # neither the split nor any part
    assert [e.cached for e in events if isinstance(e, PartEnded)] == [True, True]
    assert all(section.cached for section in report.sections)
    assert report.sections[1].text.endswith("[2].")


def test_another_budget_asks_the_parts_again(store: Store) -> None:
    research(ScriptedLLM(reply=Reader()), store)
    reader = Reader()
    research(ScriptedLLM(reply=reader), store, stages=[Stage(BM25Scorer(), 400)])
    assert reader.asked == [SWARM, PARAFFIN]


def test_a_stop_keeps_what_is_done_and_the_rerun_resumes_from_it(store: Store) -> None:
    report, _ = research(ScriptedLLM(reply=Reader()), store, stop_at=2)
    assert [s.state for s in report.sections] == [ANSWERED, STOPPED]
    assert report.stopped
    assert report.sections[0].text.startswith("Orla Vance")
    assert report.short_answer()[1] == "Part 2: stopped before it was answered."
    reader = Reader()
    llm = ScriptedLLM(reply=reader)
    report, _ = research(llm, store)
    assert reader.asked == [PARAFFIN]  # the first part came from the cache
    assert requests(llm, "split") == []
    assert [s.state for s in report.sections] == [ANSWERED, ANSWERED] and not report.stopped


def test_a_part_that_finds_nothing_says_so_and_is_not_padded(store: Store) -> None:
    report, _ = research(ScriptedLLM(reply=Reader()), store, given=(SWARM, NOWHERE))
    found, nothing = report.sections
    assert (found.state, nothing.state) == (ANSWERED, NOTHING)
    assert nothing.reason == NO_SOURCES and nothing.claims == [] and nothing.text == ""
    assert report.short_answer()[1] == f"Part 2: nothing found: {NO_SOURCES}."
    assert "[" not in report.body().split("## 2.")[1]


def test_parts_given_are_researched_as_given_without_a_split(store: Store) -> None:
    llm = ScriptedLLM(reply=Reader())
    report, events = research(llm, store, given=(PARAFFIN,))
    assert requests(llm, "split") == []
    assert [e for e in events if isinstance(e, PartsPlanned)] == [PartsPlanned((PARAFFIN,), GIVEN)]
    assert report.single and report.given
    assert report.body() == report.sections[0].markdown


def test_a_reply_with_no_part_researches_the_question_as_one_part(store: Store) -> None:
    reader = Reader(split="I think this is about bees and lamps.")
    report, events = research(ScriptedLLM(reply=reader), store)
    assert [s.part for s in report.sections] == [QUESTION]
    assert any("could not be read" in getattr(e, "message", "") for e in events)
