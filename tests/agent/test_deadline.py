"""A question never waits for its slowest page: real pages over loopback, a real cache."""

from __future__ import annotations

import asyncio

from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.agent.research import Dropped
from htmlrag_chat.base.events import Event, Skipped, StageFinished
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.results import SearchResult
from tests.sources.test_recorder import slow_site

QUESTION = "Under which license is Docker released?"


def test_a_page_that_never_answers_is_left_out_and_the_answer_still_comes(tmp_path):
    events: list[Event] = []

    async def scenario():
        async with slow_site({"/fast": 0.0}) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                results = [SearchResult(f"{base}/{name}", name) for name in ("fast", "never")]
                store.put_search(QUESTION, results)  # as `cache import` stores it
                agent = Agent(
                    sources=[
                        WebSource(
                            WebRecorder(store, fetcher=Fetcher(FetchPolicy(allow_private=True)))
                        )
                    ],
                    reader=ExtractiveReader(),
                    stages=[Stage(BM25Scorer(), 1000)],
                    counter=ApproxTokenCounter(),
                    emit=events.append,
                    deadline=0.3,
                )
                answer = await agent.ask(QUESTION)
                await agent.settle(0)
                return answer, base

    answer, base = asyncio.run(scenario())
    assert "Apache License" in answer.text
    assert [source.url for source in answer.sources] == [f"{base}/fast"]
    # Left out at the deadline, not failed at the page's own (20 s) timeout: no clock needed.
    (skipped,) = [event for event in events if isinstance(event, Skipped)]
    assert skipped.what == f"{base}/never" and "left out" in skipped.reason
    assert answer.research.left_out == [Dropped(f"{base}/never", skipped.reason)]
    fetch = next(e for e in events if isinstance(e, StageFinished) and e.stage == "fetch")
    assert fetch.counts == {"pages": 1, "failed": 0, "left_out": 1}
