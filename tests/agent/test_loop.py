"""The agent end to end: a scripted LLM server on loopback, a replayed web in a real SQLite
store, real cleaning and BM25 pruning, real citation checks.

The model's replies are routed by prompt: the rewrite prompt holds "New message:", the
sufficiency check "Do the sources above contain", and the reader call starts with a system
message. Small pages with distinct facts about two cities make support checks meaningful.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.agent.answer import Answer, Turn, stored_source
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.agent.research import NOTHING_LEFT, Dropped
from htmlrag_chat.base.cancel import StopFlag
from htmlrag_chat.base.events import (
    AnswerDelta,
    Event,
    Notice,
    Searching,
    Skipped,
    StageFinished,
    StageStarted,
)
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.layout import reminder
from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.scoring.bert import MAX_WORKERS
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.scoring.embed import EmbeddingScorer, load_embedding_model
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import NOT_RECORDED, WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from htmlrag_chat.web.settings import SearchSettings
from tests.conftest import PAGES as FIXTURE_PAGES
from tests.openai_server import ScriptedLLM, serve_llm
from tests.stopping import CountedCalls

MODEL = "scripted-reader"
REWRITE_MARK = "New message:"
CHECK_MARK = "Do the sources above contain"


def page(title: str, *paragraphs: str) -> str:
    """A small article page with the boilerplate a real one has around its text."""
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title}</title>"
        "<script>window.tracking = true;</script></head><body>"
        '<nav><a href="/">Home</a> <a href="/cities">Cities</a></nav>'
        f"<main><article><h1>{title}</h1>{body}</article></main>"
        "<footer>Copyright 2024 City Guides</footer></body></html>"
    )


LYON_URL = "https://cities.example/lyon"
PORTO_URL = "https://cities.example/porto"
CENSUS_URL = "https://stats.example/lyon-census"
PAGES = {
    LYON_URL: page(
        "Lyon travel guide",
        "Lyon hosts the Festival of Lights every December, when residents put candles in "
        "their windows.",
        "The Basilica of Notre-Dame de Fourvière overlooks the old town from its hill.",
        "Lyon lies where the Rhône and the Saône rivers meet.",
    ),
    PORTO_URL: page(
        "Porto travel guide",
        "Porto stands on the north bank of the Douro river.",
        "The Dom Luís I bridge over the Douro was completed in 1886.",
        "Port wine is aged in cellars in Vila Nova de Gaia, across the river.",
    ),
    CENSUS_URL: page(
        "Lyon census",
        "The population of Lyon was 522,250 at the 2020 census.",
        "The metropolis of Lyon counts about 1.4 million inhabitants.",
    ),
}

LYON_QUESTION = "What is Lyon known for?"
BOTH_QUESTION = "What are Lyon and Porto known for?"
POPULATION_QUERY = "population of Lyon"
SEARCHES = {
    LYON_QUESTION: [LYON_URL],
    BOTH_QUESTION: [LYON_URL, PORTO_URL],
    POPULATION_QUERY: [CENSUS_URL],
    "Lyon festival": [LYON_URL],
    "Porto bridge": [PORTO_URL],
}
LYON_ANSWER = "Lyon hosts the Festival of Lights every December [1]."


@dataclass
class Script:
    """The scripted model: one reply per kind of call, routed by the prompt."""

    rewrite: str = "SEARCH: something else entirely"
    check: str = "ENOUGH"
    answer: str = LYON_ANSWER

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        return {"rewrite": self.rewrite, "check": self.check, "read": self.answer}[kind(messages)]


def kind(messages: list[dict[str, Any]]) -> str:
    """Which call a request is: "read", "rewrite" or "check"."""
    content = messages[-1]["content"]
    if REWRITE_MARK in content:
        return "rewrite"
    if CHECK_MARK in content:
        return "check"
    return "read"


def requests_of(llm: ScriptedLLM, call: str) -> list[list[dict[str, Any]]]:
    """The messages of every request of one kind the server saw, in order."""
    return [body["messages"] for body in llm.requests if kind(body["messages"]) == call]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A recording with the searches and pages above, as ``htmlrag-chat`` would make it."""
    store = Store.open(tmp_path / "c.db")
    for query, urls in SEARCHES.items():
        results = [SearchResult(url, f"{url} title", "a snippet") for url in urls]
        store.put_search(query, results, region="wt-wt", safesearch="moderate", backend="ddg")
    for url, html in PAGES.items():
        data = html.encode("utf-8")
        store.put_page(
            FetchResult(
                url,
                Outcome.OK,
                status=200,
                content_type="text/html",
                charset="utf-8",
                body=data,
                bytes=len(data),
                fetched_at=time.time(),
            )
        )
    yield store
    store.close()


@dataclass
class Run:
    """One question's answer and every event it emitted."""

    answer: Answer
    events: list[Event] = field(default_factory=list)

    def of(self, event_type: type) -> list[Any]:
        """The events of one type, in order."""
        return [event for event in self.events if isinstance(event, event_type)]

    def stages(self, event_type: type[StageStarted] | type[StageFinished]) -> list[str]:
        """The stage names of every start (or finish) event, in order."""
        return [event.stage for event in self.of(event_type)]


@dataclass
class SlowWeb(WebRecorder):
    """A replayed web whose downloads take half a second, as real ones take seconds: time
    for the scripted model to write a plan while the question's own pages come in."""

    async def fetch_many(self, *args: Any, **kwargs: Any) -> list[FetchResult]:
        await asyncio.sleep(0.5)
        return await super().fetch_many(*args, **kwargs)


def make_agent(url: str, store: Store, events: list[Event], **options: Any) -> Agent:
    """The agent as ``htmlrag-chat ask --reader openai --replay`` builds it, with BM25 only
    (``slow``: on a ``SlowWeb``; ``documents``: a source before the web; ``web`` False:
    ``--no-web``)."""
    web = WebSource((SlowWeb if options.pop("slow", False) else WebRecorder)(store, replay=True))
    sources = [*options.pop("documents", ()), *([web] if options.pop("web", True) else [])]
    options = {"stages": [Stage(BM25Scorer(), 2048)], **options}
    return Agent(
        sources=sources,
        reader=LLMReader(OpenAIChat(url, MODEL), "openai"),
        counter=ApproxTokenCounter(),
        emit=events.append,
        **options,
    )


def ask(
    llm: ScriptedLLM,
    store: Store,
    message: str,
    history: Sequence[Turn] = (),
    **options: Any,
) -> Run:
    """Ask one question against a fresh server running ``llm``."""
    events: list[Event] = []

    async def main() -> Answer:
        async with serve_llm(llm) as url:
            return await make_agent(url, store, events, **options).ask(message, history)

    return Run(asyncio.run(main()), events)


def urls(answer: Answer) -> list[str]:
    """The URLs of an answer's sources, in source-number order."""
    return [source.url for source in answer.sources]


def lyon_turn(store: Store) -> Turn:
    """A first exchange about Lyon, with the sources its answer was given."""
    first = ask(ScriptedLLM(reply=Script()), store, LYON_QUESTION, rounds=1).answer
    assert urls(first) == [LYON_URL]
    return Turn(first.question, first.text, tuple(first.sources))


# -- planning


def test_a_first_message_is_searched_as_typed_not_as_rephrased(store: Store) -> None:
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: famous sights of Lyon France"))
    run = ask(llm, store, LYON_QUESTION, slow=True)
    assert len(requests_of(llm, "rewrite")) == 1
    assert run.of(Searching) == [Searching(1, (LYON_QUESTION,), "as typed")]
    assert run.of(Skipped) == []  # the rephrasing was never searched
    assert run.answer.research.queries == [LYON_QUESTION]
    assert urls(run.answer) == [LYON_URL]
    assert run.answer.text == LYON_ANSWER


@pytest.mark.parametrize(
    ("max_queries", "queries"),
    [
        (3, ("Lyon festival", "Porto bridge")),
        (2, ("Lyon festival",)),
    ],
)
def test_sub_queries_that_come_while_the_pages_do_join_the_first_round(
    store: Store, max_queries: int, queries: tuple[str, ...]
) -> None:
    reply = "SEARCH: Lyon festival\nSEARCH: Porto bridge\nSEARCH: Lyon rivers"
    llm = ScriptedLLM(reply=Script(rewrite=reply))
    run = ask(llm, store, BOTH_QUESTION, max_queries=max_queries, slow=True)
    [rewrite] = requests_of(llm, "rewrite")
    assert f"up to {max_queries}" in rewrite[-1]["content"]
    assert run.of(Searching) == [
        Searching(1, (BOTH_QUESTION,), "as typed"),
        Searching(1, queries, "sub-queries"),
    ]
    assert run.answer.research.queries == [BOTH_QUESTION, *queries]
    assert run.answer.research.rounds == 1
    assert sorted(urls(run.answer)) == [LYON_URL, PORTO_URL]


class Held:
    """Holds the rewrite's reply for good: a plan that never comes."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def __call__(self, messages: list[dict[str, Any]]) -> None:
        if kind(messages) == "rewrite":
            await self.gate.wait()


@pytest.mark.parametrize("check", ["ENOUGH", f"MISSING: {POPULATION_QUERY}"])
def test_a_plan_that_has_not_replied_when_the_pages_are_in_is_stopped(
    store: Store, check: str
) -> None:
    """The plan never answers here: the question is searched, pruned, checked and answered
    all the same; the plan is stopped (its connection closed) once the question's pages
    are in, and only the check's second round searches more."""
    reply = Script(rewrite="SEARCH: Lyon festival\nSEARCH: Porto bridge", check=check)
    llm = ScriptedLLM(reply=reply, before=Held())
    run = ask(llm, store, LYON_QUESTION, rounds=2, slow=True)
    assert len(requests_of(llm, "rewrite")) == 1 and llm.disconnected.is_set()
    [plan] = [e for e in run.of(StageFinished) if e.stage == "plan"]
    assert plan.counts == {"stopped": 1}
    stages = run.stages(StageStarted)
    assert stages.index("search") < stages.index("check") < stages.index("read")
    first = Searching(1, (LYON_QUESTION,), "as typed")
    if check == "ENOUGH":
        assert run.of(Searching) == [first] and urls(run.answer) == [LYON_URL]
        assert run.answer.text == LYON_ANSWER
    else:
        second = Searching(2, (POPULATION_QUERY,), f"missing: {POPULATION_QUERY}")
        assert run.of(Searching) == [first, second]
        assert run.answer.research.queries == [LYON_QUESTION, POPULATION_QUERY]


@pytest.mark.parametrize("options", [{"max_queries": 1}, {"plan_first": False}])
def test_no_plan_runs_when_it_cannot_add_a_query_or_is_not_wanted(
    store: Store, options: dict[str, Any]
) -> None:
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: Lyon festival\nSEARCH: Porto bridge"))
    run = ask(llm, store, BOTH_QUESTION, slow=True, **options)
    assert requests_of(llm, "rewrite") == []
    assert "plan" not in run.stages(StageStarted)
    assert run.of(Searching) == [Searching(1, (BOTH_QUESTION,), "as typed")]


def test_the_check_stops_reading_at_its_first_word(store: Store) -> None:
    """A check that starts with ENOUGH is settled: the rest of its reply is never read,
    and the connection is closed so that the server stops writing it."""
    explained = "ENOUGH. " + "The sources say all that the question asks about Lyon. " * 20
    llm = ScriptedLLM(reply=Script(check=explained), chunk_delay=0.02)
    run = ask(llm, store, LYON_QUESTION, rounds=2)
    assert llm.disconnected.is_set()
    [check] = [e for e in run.of(StageFinished) if e.stage == "check"]
    assert check.counts == {"enough": 1}
    assert run.answer.research.rounds == 1 and run.answer.text == LYON_ANSWER


def test_a_follow_up_is_rewritten_with_the_history(store: Store) -> None:
    turn = lyon_turn(store)
    follow_up = "How many people live there?"
    llm = ScriptedLLM(
        reply=Script(
            rewrite=f"SEARCH: {POPULATION_QUERY}",
            answer="The population of Lyon was 522,250 at the 2020 census [1].",
        )
    )
    run = ask(llm, store, follow_up, [turn], rounds=1)

    [rewrite] = requests_of(llm, "rewrite")
    # The rewrite continues the conversation as the last answer left it: system text, the
    # first question with its sources, its answer, then the request (one shared prefix).
    assert [m["role"] for m in rewrite] == ["system", "user", "assistant", "user"]
    assert rewrite[1]["content"].endswith(f"Question: {LYON_QUESTION}\n{reminder(LYON_QUESTION)}")
    assert f"URL: {LYON_URL}" in rewrite[1]["content"]
    assert rewrite[2]["content"] == LYON_ANSWER
    assert rewrite[-1]["content"].startswith(f"{REWRITE_MARK} {follow_up}")
    assert run.of(Searching) == [Searching(1, (POPULATION_QUERY,), "rewritten")]
    assert run.answer.research.queries == [POPULATION_QUERY]
    assert urls(run.answer) == [CENSUS_URL]
    # The reader sees the conversation before the new question; its new sources replace
    # the old ones, which the earlier turn no longer carries.
    [read] = requests_of(llm, "read")
    assert read[:3] == [
        rewrite[0],
        {"role": "user", "content": f"Question: {LYON_QUESTION}\n{reminder(LYON_QUESTION)}"},
        {"role": "assistant", "content": LYON_ANSWER},
    ]
    assert f"URL: {CENSUS_URL}" in read[-1]["content"]
    assert read[-1]["content"].endswith(f"Question: {follow_up}\n{reminder(follow_up)}")
    assert run.answer.claims[0].supported


def test_shorter_please_reuses_the_previous_sources_without_searching(store: Store) -> None:
    turn = lyon_turn(store)
    llm = ScriptedLLM(reply=Script(rewrite="NO SEARCH", answer="Festival of Lights [1]."))
    run = ask(llm, store, "shorter please", [turn])

    assert run.of(Searching) == []
    assert not {"search", "fetch", "check"} & set(run.stages(StageStarted))
    assert run.answer.research.rounds == 0
    assert run.answer.research.queries == []
    assert run.answer.sources == list(turn.sources)
    [read] = requests_of(llm, "read")
    [rewrite] = requests_of(llm, "rewrite")
    # The sources are already in the first turn, exactly as the rewrite (and the answer
    # before it) had them: the whole conversation is one cached prefix.
    assert read[:-1] == rewrite[:-1]
    first_turn = read[1]["content"]
    assert f"[1] {turn.sources[0].title}\nURL: {LYON_URL}" in first_turn
    assert turn.sources[0].html in first_turn
    assert read[-1]["content"] == f"Question: shorter please\n{reminder('shorter please')}"
    assert requests_of(llm, "check") == []
    assert run.answer.text == "Festival of Lights [1]."


def test_a_follow_up_the_replay_cannot_search_is_answered_from_the_previous_sources(
    store: Store,
) -> None:
    turn = lyon_turn(store)
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: Lyon metro lines", answer="Lyon [1]."))
    run = ask(llm, store, "Does it have a metro?", [turn], rounds=1)

    [skipped] = run.of(Skipped)
    assert skipped.kind == "query" and skipped.what == "Lyon metro lines"
    assert any("previous answer's sources" in notice.message for notice in run.of(Notice))
    assert run.answer.sources == list(turn.sources)


def test_an_unreadable_rewrite_of_a_follow_up_searches_the_message(store: Store) -> None:
    turn = lyon_turn(store)
    follow_up = "What are Lyon and Porto known for?"
    llm = ScriptedLLM(reply=Script(rewrite="I would search for both cities, I think."))
    run = ask(llm, store, follow_up, [turn])

    [notice] = run.of(Notice)
    assert "rewrite could not be read" in notice.message
    assert run.answer.research.notes == [notice.message]
    assert run.of(Searching) == [Searching(1, (follow_up,), "as typed")]
    assert sorted(urls(run.answer)) == [LYON_URL, PORTO_URL]


# -- search rounds


def test_missing_information_triggers_exactly_one_more_round(store: Store) -> None:
    llm = ScriptedLLM(
        reply=Script(
            check=f"MISSING: {POPULATION_QUERY}",
            answer="Lyon hosts the Festival of Lights [1] and had 522,250 inhabitants [2].",
        )
    )
    run = ask(llm, store, LYON_QUESTION, rounds=2)

    assert run.of(Searching) == [
        Searching(1, (LYON_QUESTION,), "as typed"),
        Searching(2, (POPULATION_QUERY,), f"missing: {POPULATION_QUERY}"),
    ]
    [check] = requests_of(llm, "check")
    assert LYON_URL in check[-1]["content"]
    assert run.answer.research.rounds == 2
    assert run.answer.research.queries == [LYON_QUESTION, POPULATION_QUERY]
    assert urls(run.answer) == [LYON_URL, CENSUS_URL]
    [read] = requests_of(llm, "read")
    assert LYON_URL in read[-1]["content"]
    assert CENSUS_URL in read[-1]["content"]
    assert "522,250" in read[-1]["content"]


def test_round_two_cleans_only_the_pages_it_adds(store: Store) -> None:
    """The recorded two-round question: round 1's page is cleaned once, and round 2 takes
    it as cleaned (``kept``) and cleans only the census page it adds."""
    llm = ScriptedLLM(reply=Script(check=f"MISSING: {POPULATION_QUERY}"))
    run = ask(llm, store, LYON_QUESTION, rounds=2)
    cleans = [event.counts for event in run.of(StageFinished) if event.stage == "clean"]
    assert cleans == [{"pages": 1, "failed": 0}, {"pages": 2, "failed": 0, "kept": 1}]
    cleaned = sum(counts["pages"] + counts["failed"] - counts.get("kept", 0) for counts in cleans)
    assert cleaned == len(set(urls(run.answer))) == 2


def test_the_same_missing_query_does_not_search_again(store: Store) -> None:
    llm = ScriptedLLM(reply=Script(check=f"MISSING: {POPULATION_QUERY}"))
    run = ask(llm, store, LYON_QUESTION, rounds=3)
    assert [event.round for event in run.of(Searching)] == [1, 2]
    assert len(requests_of(llm, "check")) == 2
    assert run.answer.research.rounds == 2


@pytest.mark.parametrize("check", ["ENOUGH", "Well, the sources mention a festival."])
def test_enough_or_an_unreadable_check_ends_after_one_round(store: Store, check: str) -> None:
    llm = ScriptedLLM(reply=Script(check=check))
    run = ask(llm, store, LYON_QUESTION, rounds=2)
    assert run.of(Searching) == [Searching(1, (LYON_QUESTION,), "as typed")]
    assert len(requests_of(llm, "check")) == 1
    assert run.answer.research.rounds == 1
    assert urls(run.answer) == [LYON_URL]


def test_a_query_missing_from_the_replay_is_skipped(store: Store) -> None:
    llm = ScriptedLLM(
        reply=Script(
            rewrite="SEARCH: Lyon festival\nSEARCH: Porto nightlife",
            answer="Lyon hosts the Festival of Lights [1]. The Dom Luís I bridge was completed"
            " in 1886 [2].",
        )
    )
    run = ask(llm, store, BOTH_QUESTION, rounds=1, slow=True)

    skipped = run.of(Skipped)
    assert [(s.what, s.kind) for s in skipped] == [("Porto nightlife", "query")]
    assert NOT_RECORDED in skipped[0].reason
    # The answer says so itself: the faces read it there, not from the events.
    assert run.answer.research.skipped == [Dropped("Porto nightlife", skipped[0].reason)]
    assert run.answer.to_json()["skipped_queries"] == [
        {"query": "Porto nightlife", "reason": skipped[0].reason}
    ]
    assert sorted(urls(run.answer)) == [LYON_URL, PORTO_URL]  # from the recorded queries
    assert "Festival of Lights" in run.answer.text
    assert all(citation.supported for citation in run.answer.claims)


# -- reading and checking


def test_invented_citation_numbers_never_reach_the_screen(store: Store) -> None:
    llm = ScriptedLLM(
        reply=Script(
            answer="Lyon hosts the Festival of Lights [1]. Porto has many bridges [9]. "
            "The Dom Luís I bridge was completed in 1886 [2]."
        )
    )
    run = ask(llm, store, BOTH_QUESTION, rounds=1)

    assert len(run.answer.sources) == 2
    written = (
        "Lyon hosts the Festival of Lights [1]. Porto has many bridges. "
        "The Dom Luís I bridge was completed in 1886 [2]."
    )
    assert run.answer.removed_citations == 1
    deltas = [delta.text for delta in run.of(AnswerDelta)]
    assert len(deltas) > 1
    assert not any("[9]" in delta or "9]" in delta for delta in deltas)
    assert "".join(deltas).strip() == written == run.answer.written
    # The sentence that lost its invented [9] cites nothing now: the checker found the
    # source that backs it, and the answer shows it, marked as the checker's.
    assert [c.cited for c in run.answer.claims] == [(1,), (), (2,)]
    assert [c.shown for c in run.answer.claims] == [(1,), (2,), (2,)]
    assert run.answer.text == written.replace("bridges.", "bridges [2]\u2020.")


def test_a_reasoning_model_s_thoughts_never_reach_the_answer_or_its_citations(
    store: Store,
) -> None:
    llm = ScriptedLLM(
        reply=Script(
            rewrite="<think>\nSEARCH: Porto bridge\nSEARCH: Lyon festival\n</think>\n"
            "SEARCH: Lyon festival",
            answer=f"<think>Source [2] says nothing; I will cite [1].</think>{LYON_ANSWER}",
        )
    )
    run = ask(llm, store, LYON_QUESTION, rounds=1)
    assert run.answer.text == run.answer.markdown == LYON_ANSWER
    assert "think" not in "".join(delta.text for delta in run.of(AnswerDelta))
    assert [c.cited for c in run.answer.claims] == [(1,)]
    # The thought's two queries would have been sub-queries: only the reply's one counts.
    assert run.answer.research.queries == [LYON_QUESTION]
    # An answer that thinks until its tokens run out says nothing, and is flagged.
    unfinished = Script(answer="<think>The festival is in December, so")
    silent = ask(ScriptedLLM(reply=unfinished), store, LYON_QUESTION, rounds=1).answer
    assert silent.text == "" and not silent.cited and silent.sources


def test_an_answer_citing_no_source_gets_the_checker_s_quotes_marked_as_added(
    store: Store,
) -> None:
    llm = ScriptedLLM(reply=Script(answer="Lyon hosts a festival of lights every December."))
    answer = ask(llm, store, LYON_QUESTION, rounds=1).answer
    [claim] = answer.claims
    [quote] = claim.backing
    assert claim.cited == () and quote.added and quote.source == 1
    assert quote.text.startswith("Lyon hosts the Festival of Lights every December")
    # The answer shows the checker's citation, marked, and says so under it; the text as
    # the model wrote it is kept.
    assert answer.text == "Lyon hosts a festival of lights every December [1]\u2020."
    assert answer.written == "Lyon hosts a festival of lights every December."
    assert answer.cited and answer.flags == []
    assert answer.corrections == [
        'corrected: "Lyon hosts a festival of lights every December." cited nothing; [1] backs it'
    ]
    record = answer.to_json()
    assert record["cited"] is True and record["sentences"][0]["citations"][0]["added"] is True
    assert record["sentences"][0]["cited"] == [] and record["sentences"][0]["corrected"] == [1]
    assert record["answer_as_written"] == answer.written


def test_an_answer_no_source_backs_is_flagged_and_its_sources_still_listed(store: Store) -> None:
    llm = ScriptedLLM(reply=Script(answer="Lyon builds submarines for the navy."))
    answer = ask(llm, store, LYON_QUESTION, rounds=1).answer
    [claim] = answer.claims
    assert not claim.supported and claim.backing == ()
    assert not answer.cited and answer.flags == [
        f'unsupported: "Lyon builds submarines for the navy." cites nothing, and no passage of '
        f"any source backs it (support {claim.support:.2f})"
    ]
    record = answer.to_json()
    assert record["cited"] is False and [s["url"] for s in record["sources"]] == [LYON_URL]
    cited = ask(ScriptedLLM(reply=Script()), store, LYON_QUESTION, rounds=1).answer
    assert cited.cited and cited.to_json()["cited"] is True and cited.flags == []


def test_a_check_that_echoes_its_placeholder_searches_nothing_more(store: Store) -> None:
    """SmolLM2 answered the sufficiency prompt with its placeholder, and it was searched."""
    check = "MISSING: <a web search query for the information that is missing>"
    llm = ScriptedLLM(reply=Script(check=check))
    run = ask(llm, store, LYON_QUESTION, rounds=2)
    assert run.answer.research.rounds == 1 and len(requests_of(llm, "check")) == 1
    assert not any("<" in query for query in run.answer.research.queries)


FOOTNOTED_URL = "https://towers.example/eiffel"
FOOTNOTED = page(
    "Eiffel tower",
    "The Eiffel tower stands in Paris [3] and was finished in 1889 [2].",
    "Its height is read with <code>heights[0]</code> in the survey data [1].",
)
TOWER_QUESTION = "When was the Eiffel tower finished?"


def add_footnoted_page(store: Store) -> None:
    """A page with footnote markers of its own, found with two other pages, so that its
    [2] and [3] are also the numbers of real sources."""
    store.put_search(
        TOWER_QUESTION, [SearchResult(u, u) for u in (FOOTNOTED_URL, LYON_URL, PORTO_URL)]
    )
    store.put_page(FetchResult(FOOTNOTED_URL, Outcome.OK, status=200, body=FOOTNOTED.encode()))


def test_a_quoted_sentence_is_verbatim_and_cites_only_its_own_source(store: Store) -> None:
    add_footnoted_page(store)
    events: list[Event] = []

    async def main() -> Answer:
        agent = Agent(
            sources=[WebSource(WebRecorder(store, replay=True))],
            reader=ExtractiveReader(max_sentences=1),
            stages=[Stage(BM25Scorer(), 2048)],
            counter=ApproxTokenCounter(),
            emit=events.append,
        )
        return await agent.ask(TOWER_QUESTION)

    answer = asyncio.run(main())
    # The page's own markers are left out: [3] and [2] would read as sources 3 and 2.
    quote = "The Eiffel tower stands in Paris and was finished in 1889."
    assert answer.sources[0].url == FOOTNOTED_URL and len(answer.sources) == 3
    assert answer.text.endswith(f"- {quote} [1]")
    assert answer.removed_citations == 0
    header, quoted = answer.claims
    assert not header.checked  # "Extractive answer (...):" says what follows
    assert (quoted.sentence, quoted.cited, quoted.supported) == (quote, (1,), True)
    # The Markdown the app shows and stores escapes the page's markers: never cite links.
    assert answer.markdown.endswith(f"- {escape_markdown(quote)} [1]")
    assert answer.store_record()["text"] == answer.markdown
    quoted = [e.text for e in events if isinstance(e, AnswerDelta) and e.quoted]
    assert quoted == [quote]


def test_a_reader_llm_sees_footnotes_escaped_and_its_code_is_left_alone(store: Store) -> None:
    add_footnoted_page(store)
    reply = (
        "It was finished in 1889 \\[2\\] [1]. Read it with `heights[0]` [1]:\n"
        "```python\nyear = data[9]\n```"
    )
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: x", answer=reply))
    run = ask(llm, store, TOWER_QUESTION, rounds=1)
    (read,) = requests_of(llm, "read")
    assert "Paris \\[3\\] and was finished in 1889 \\[2\\]" in read[-1]["content"]
    assert "<code>heights[0]</code>" in read[-1]["content"]  # code reaches it as it is
    assert run.answer.text == reply and run.answer.removed_citations == 0
    assert [c.cited for c in run.answer.claims] == [(1,), (1,)]


def test_a_markdown_reader_gets_markdown_and_the_record_keeps_how(store: Store) -> None:
    """``--render markdown``: the reader's sources are Markdown (no tags), markers still
    escaped, and a follow-up from the stored record renders them the same way."""
    add_footnoted_page(store)
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: x", answer="In 1889 [1]."))
    run = ask(llm, store, TOWER_QUESTION, rounds=1, rendering="markdown")
    (read,) = requests_of(llm, "read")
    content = read[-1]["content"]
    assert "Paris \\[3\\] and was finished in 1889 \\[2\\]" in content
    assert "<p>" not in content and "`heights[0]`" in content
    sources = json.loads(json.dumps(run.answer.to_json()))["sources"]
    [source] = [source for source in sources if source["url"] == FOOTNOTED_URL]
    assert source["rendering"] == "markdown" and source["content"].startswith("<html")
    assert stored_source(source).rendering == "markdown"
    assert stored_source({**source, "rendering": "pdf"}).rendering == "html"  # not ours


def test_a_sentence_its_source_does_not_say_is_flagged(store: Store) -> None:
    llm = ScriptedLLM(
        reply=Script(
            answer="Lyon hosts the Festival of Lights every December [1]. "
            "Napoleon built the tallest skyscraper of Europe there in 1802 [1]."
        )
    )
    run = ask(llm, store, LYON_QUESTION, rounds=1)

    copied, invented = run.answer.claims
    assert copied.sentence == "Lyon hosts the Festival of Lights every December."
    assert copied.supported
    assert invented.sentence.startswith("Napoleon built")
    assert not invented.supported
    [flag] = run.answer.flags
    assert flag == (
        'unsupported: "Napoleon built the tallest skyscraper of Europe there in 1802." '
        "cites [1], but 1802 is not in it"
    )


def test_cancelling_stops_the_answer_and_the_server_sees_it(store: Store) -> None:
    # The stall applies to every streamed reply: the rewrite must be shorter than it.
    llm = ScriptedLLM(
        reply=Script(
            rewrite="SEARCH: Lyon",
            answer="Lyon hosts the Festival of Lights every December [1].",
        ),
        hang_after=3,
    )

    async def main() -> None:
        events: list[Event] = []
        first_delta = asyncio.Event()

        def emit(event: Event) -> None:
            events.append(event)
            if isinstance(event, AnswerDelta):
                first_delta.set()

        async with serve_llm(llm) as url:
            agent = make_agent(url, store, events, rounds=1)
            agent.emit = emit
            task = asyncio.create_task(agent.ask(LYON_QUESTION))
            await asyncio.wait_for(first_delta.wait(), 60)
            task.cancel()
            # The stream stalls for ever: the task ends because the cancel reached it (the
            # guard only turns a hang into a failure).
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 60)
            await asyncio.wait_for(llm.disconnected.wait(), 60)
            finished = [event.stage for event in events if isinstance(event, StageFinished)]
            assert "read" not in finished  # the answer never completed

    asyncio.run(main())


@dataclass
class MeteredScorer(EmbeddingScorer):
    """The real embedding stage, counting the threads inside ``score`` at any moment."""

    active: int = 0
    most: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def score(self, query: str, tree: Any) -> list[float]:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            return super().score(query, tree)
        finally:
            with self.lock:
                self.active -= 1


def test_a_stopped_question_stops_its_pruning_thread_before_the_next_one(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Esc while the embedding stage works through real pages: the thread stops between the
    layers of the batches under way (each thread takes at most the layer it was cleared
    for), before ``ask`` gives up, and the next question never runs beside it."""
    big_query = "docker engine and its license"
    big = [f"https://pages.example/{page.name}" for page in FIXTURE_PAGES]
    store.put_search(big_query, [SearchResult(url, url) for url in big])
    for url, fixture in zip(big, FIXTURE_PAGES, strict=True):
        store.put_page(FetchResult(url, Outcome.OK, status=200, body=fixture.data))
    scorer = MeteredScorer(device="cpu")
    model = load_embedding_model(scorer.model_name, "cpu")  # the numpy encoder
    counted = CountedCalls(model.forward)

    async def main() -> tuple[int, int, Answer]:
        agent = Agent(
            sources=[WebSource(WebRecorder(store, replay=True))],
            reader=ExtractiveReader(),
            stages=[Stage(scorer, 2048)],
            counter=ApproxTokenCounter(),
        )
        task = asyncio.create_task(agent.ask(big_query))
        while counted.calls == 0:
            assert not task.done()
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return scorer.active, layers.calls, await agent.ask(LYON_QUESTION)

    layers = CountedCalls(model._attention)
    layers_at_stop: list[int] = []

    def stop(flag: StopFlag) -> None:  # the real one, noting how far the model was by then
        set_flag(flag)
        layers_at_stop.append(layers.calls)

    set_flag = StopFlag.set
    monkeypatch.setattr(StopFlag, "set", stop)
    monkeypatch.setattr(model, "forward", counted)  # once per batch the model runs
    monkeypatch.setattr(model, "_attention", layers)  # once per layer of a batch
    active_after_stop, layers_when_stopped, answer = asyncio.run(main())
    assert active_after_stop == 0 and len(layers_at_stop) == 1
    threads = min(len(os.sched_getaffinity(0)), MAX_WORKERS)
    assert layers_when_stopped - layers_at_stop[0] <= threads
    assert scorer.most == 1  # never two scoring threads at once
    assert urls(answer) == [LYON_URL] and "Festival of Lights" in answer.text


# -- events and the record


EXPECTED_STAGES = [  # with no plan beside the search (it overlaps the search and fetch)
    "search",
    "fetch",
    "clean",
    "bm25/blocks",
    "bm25/score",
    "bm25/prune",
    "check",
    "read",
    "cite",
]


def test_every_stage_reports_its_start_finish_and_time(store: Store) -> None:
    llm = ScriptedLLM(reply=Script())
    run = ask(llm, store, LYON_QUESTION, rounds=2, plan_first=False)

    assert run.stages(StageStarted) == EXPECTED_STAGES
    assert run.stages(StageFinished) == EXPECTED_STAGES
    # Stages do not overlap: each one finishes before the next one starts.
    bounds = [e.stage for e in run.events if isinstance(e, StageStarted | StageFinished)]
    assert bounds == [name for name in EXPECTED_STAGES for _ in range(2)]
    assert set(run.answer.research.timings) == set(EXPECTED_STAGES)
    assert all(ms >= 0 for ms in run.answer.research.timings.values())
    finished = {e.stage: e for e in run.of(StageFinished)}
    assert finished["fetch"].counts == {"pages": 1, "failed": 0}
    assert finished["cite"].counts["sentences"] == 1
    assert run.answer.first_token_ms is not None
    assert 0 < run.answer.first_token_ms <= run.answer.total_ms


def test_the_json_record_holds_the_answer_and_what_it_came_from(store: Store) -> None:
    llm = ScriptedLLM(
        reply=Script(answer=LYON_ANSWER + " Lyon has a famous opera house by Napoleon [1].")
    )
    answer = ask(llm, store, LYON_QUESTION, rounds=1, plan_first=False).answer
    record = json.loads(json.dumps(answer.to_json()))

    assert record["question"] == LYON_QUESTION
    assert record["answer"] == answer.text
    assert record["reader"] == "openai"
    assert record["model"] == MODEL
    assert [c["cited"] for c in record["sentences"]] == [[1], [1]]
    assert [c["unsupported"] for c in record["sentences"]] == [False, True]
    quote = record["sentences"][0]["citations"][0]
    assert quote["source"] == 1 and quote["url"] == LYON_URL and not quote["added"]
    assert "Festival of Lights" in quote["quote"] and quote["backs"]
    assert len(record["flags"]) == 1
    assert record["queries"] == [LYON_QUESTION]
    assert set(record["timings_ms"]) == {s for s in EXPECTED_STAGES if s != "check"}
    [source] = record["sources"]
    assert source["number"] == 1
    assert source["url"] == LYON_URL
    assert source["title"] == "Lyon travel guide"
    assert "Festival of Lights" in source["content"]
    assert "tracking" not in source["content"]  # cleaned and pruned, not the raw page


# -- context without an answer, and the record of what a question did


def test_context_is_one_round_with_no_llm_call_whatever_the_rounds(store: Store) -> None:
    """The MCP tools' path: the caller is the reader, so no plan, no sufficiency check,
    whatever ``rounds`` says (a check here would ask for a second round)."""
    llm = ScriptedLLM(reply=Script(check=f"MISSING: {POPULATION_QUERY}"))
    events: list[Event] = []

    async def main() -> tuple[Any, Any]:
        async with serve_llm(llm) as url:
            agent = make_agent(url, store, events, rounds=3)
            found = await agent.search_context(BOTH_QUESTION)
            page = await agent.page_context(CENSUS_URL, "population")
            return found, page

    found, page = asyncio.run(main())
    assert llm.requests == []
    assert [e for e in events if isinstance(e, Searching)] == [
        Searching(1, (BOTH_QUESTION,), "as typed")
    ]
    assert (found.rounds, found.queries) == (1, [BOTH_QUESTION])
    assert sorted(source.url for source in found.sources) == [LYON_URL, PORTO_URL]
    assert [source.url for source in page.sources] == [CENSUS_URL] and page.left_out == []
    assert set(found.timings) >= {"search", "fetch", "clean", "bm25/prune"}


def test_the_record_says_which_pages_were_left_out_and_why(store: Store) -> None:
    """A page the recording lacks, a page pruning kept nothing of: each left out with its
    reason, in the order tried."""
    store.put_search(
        "Lyon and more",
        [SearchResult(u, u) for u in (LYON_URL, "https://gone.example/x", PORTO_URL)],
    )
    llm = ScriptedLLM(reply=Script(rewrite="SEARCH: x"))
    run = ask(llm, store, "Lyon and more", rounds=1, stages=[Stage(BM25Scorer(), 200)])
    answer = run.answer
    assert [source.url for source in answer.sources] == [LYON_URL]
    assert answer.research.left_out == [
        Dropped("https://gone.example/x", "not in the recording"),
        Dropped(PORTO_URL, NOTHING_LEFT),
    ]
    assert answer.to_json()["left_out"][0] == {
        "url": "https://gone.example/x",
        "reason": "not in the recording",
    }


def test_search_settings_change_through_the_agent(store: Store) -> None:
    """The chat app's palette: ``search_with`` keeps the reader and the models, and the
    next question searches with the new settings (in a replay too, results and pages off
    the allowed sites are left out)."""
    llm = ScriptedLLM(reply=Script())
    events: list[Event] = []

    async def main() -> tuple[Answer, Answer]:
        async with serve_llm(llm) as url:
            agent = make_agent(url, store, events, rounds=1)
            reader = agent.reader
            agent.search_with(SearchSettings(site=("stats.example",)))
            elsewhere = await agent.ask(LYON_QUESTION)
            agent.search_with(SearchSettings())
            assert agent.reader is reader
            return elsewhere, await agent.ask(LYON_QUESTION)

    elsewhere, back = asyncio.run(main())
    assert elsewhere.sources == [] and urls(back) == [LYON_URL]


# -- the user's documents beside the web


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "festival.md").write_text(
        "# Festival notes\n\nLyon is known for the Festival of Lights; my aunt lit 40 candles."
    )
    (folder / "census.txt").write_text("The population count of 2020 gave 522,250 people.\n")
    (folder / "porto.md").write_text("# Porto\n\nThe Dom Luís I bridge crosses the Douro.\n")
    return folder


def test_documents_join_each_round_for_its_queries_before_the_pages(
    store: Store, notes: Path
) -> None:
    from htmlrag_chat.sources.library import DocumentLibrary

    llm = ScriptedLLM(reply=Script(check=f"MISSING: {POPULATION_QUERY}"))
    documents = DocumentLibrary.of([str(notes)], store)
    run = ask(llm, store, LYON_QUESTION, rounds=2, max_pages=1, documents=[documents])
    local = [s.url.rsplit("/", 1)[1] for s in run.answer.sources if s.local]
    assert local == ["festival.md", "census.txt"]  # one a round, each for its round's query
    assert urls(run.answer)[2:] == [LYON_URL, CENSUS_URL]
    [read] = requests_of(llm, "read")
    assert (
        "my aunt lit 40 candles" in read[-1]["content"] and "522,250 people" in read[-1]["content"]
    )
    assert run.stages(StageFinished).count("documents") == 2


def test_without_the_web_only_documents_are_read(store: Store, notes: Path) -> None:
    from htmlrag_chat.sources.library import DocumentLibrary

    documents = DocumentLibrary.of([str(notes)], store)
    run = ask(ScriptedLLM(reply=Script()), store, LYON_QUESTION, rounds=1, documents=[documents],
              web=False)  # fmt: skip
    assert all(source.local for source in run.answer.sources) and run.answer.sources
    assert "search" not in run.stages(StageStarted) and "fetch" not in run.stages(StageStarted)
