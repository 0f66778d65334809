"""The question loop on an in-process source of pages, as httpx's tests run on
``MockTransport``: the agent takes any ``PageSource``, so what it does with pages is tested
here without a web, a recording or a socket (the web source keeps its loopback tests in
tests/sources/ and tests/agent/test_deadline.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.agent.research import Dropped
from htmlrag_chat.base.events import Event, Searching, Skipped, StageFinished
from htmlrag_chat.pruning.pipeline import PageInput, Stage
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.sources.source import Asking, Gathered, PageSource
from tests.agent.test_loop import PAGES, PORTO_URL, page

LYON_URL = "https://cities.example/lyon"
WIKI_URL = "https://wiki.example/lyon"
QUESTION = "What is Lyon known for?"


@dataclass
class Shelf(PageSource):
    """Pages in memory, each query's by a table; what a page lacks is its failure."""

    name = "shelf"

    pages: dict[str, list[str]]  # query -> URLs
    html: dict[str, str]
    asked: list[tuple[int, tuple[str, ...]]] = field(default_factory=list)

    def gather(self, asking: Asking) -> Taken:
        return Taken(self, asking)


@dataclass
class Taken:
    shelf: Shelf
    asking: Asking
    found: Gathered = field(default_factory=Gathered)

    async def take(self, round: int, queries: Sequence[str]) -> None:
        self.shelf.asked.append((round, tuple(queries)))
        for query in queries:
            for url in self.shelf.pages.get(query, []):
                self.found.tried[url] = None
                if url in self.shelf.html:
                    self.found.pages[url] = PageInput(url, self.shelf.html[url].encode())
                else:
                    self.found.failures[url] = "gone"
                    self.asking.emit(Skipped(url, "gone"))


def answer(*sources: PageSource, events: list[Event] | None = None) -> Answer:
    agent = Agent(
        sources=list(sources),
        reader=ExtractiveReader(),
        stages=[Stage(BM25Scorer(), 2048)],
        counter=ApproxTokenCounter(),
        emit=(events if events is not None else []).append,
    )
    return asyncio.run(agent.ask(QUESTION))


def test_a_question_is_answered_from_an_in_process_source() -> None:
    shelf = Shelf({QUESTION: [LYON_URL, PORTO_URL, "https://gone.example/"]}, PAGES)
    events: list[Event] = []
    answered = answer(shelf, events=events)
    assert shelf.asked == [(1, (QUESTION,))]
    assert answered.sources[0].url == LYON_URL and "Festival of Lights" in answered.text
    assert (
        answered.cited and answered.research.rounds == 1 and answered.research.queries == [QUESTION]
    )
    # What the source tried that gave no page is the record's left_out, with why.
    assert [source.url for source in answered.sources] == [LYON_URL, PORTO_URL]
    assert answered.research.left_out == [Dropped("https://gone.example/", "gone")]
    assert [e.stage for e in events if isinstance(e, StageFinished)][:1] == ["clean"]
    assert Searching(1, (QUESTION,), "as typed") in events


def test_every_source_is_asked_in_order_and_a_page_two_give_is_read_once() -> None:
    wiki = page("Lyon on the wiki", "Lyon is known for its traboules, hidden passageways.")
    first = Shelf({QUESTION: [WIKI_URL, LYON_URL]}, {WIKI_URL: wiki, LYON_URL: PAGES[LYON_URL]})
    second = Shelf({QUESTION: [LYON_URL]}, {LYON_URL: page("Another copy", "Lyon copy.")})
    answered = answer(first, second)
    assert first.asked == second.asked == [(1, (QUESTION,))]
    assert [source.url for source in answered.sources] == [WIKI_URL, LYON_URL]
    assert "Lyon copy" not in answered.sources[1].text  # the first source's page is read
