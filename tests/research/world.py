"""A small world for research tests: a replayed web of three pages in a real SQLite store,
and a scripted reader that splits the two-part question and answers each part from the
source that holds its fact, citing it by the number the prompt gave it.

Requests are routed by their prompt: the split holds "Question to research:", the
sufficiency check "Do the sources above contain", the answer is anything else."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.base.events import Event
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.openai_server import ScriptedLLM

MODEL = "scripted-reader"
SPLIT_MARK = "Question to research:"
CHECK_MARK = "Do the sources above contain"

HIVES, LAMP, BOATS = (
    "https://bees.example/log",
    "https://lights.example/skarvik",
    "https://boats.example/shed",
)
QUESTION = (
    "For the logbook: who caught the blue hive's swarm, and how much paraffin does the Skarvik "
    "lamp burn?"
)  # not a plain list of questions: the reader splits it
SWARM = "Who caught the swarm from the blue hive?"
PARAFFIN = "How much paraffin does the Skarvik lamp burn a week in winter?"
NOWHERE = "Who painted the boathouse door?"
SPLIT = f"Here are the parts:\n1. PART: {SWARM}\n2. **PART 2:** {PARAFFIN}\n"


def page(title: str, *paragraphs: str) -> str:
    body = "".join(f"<p>{text}</p>" for text in paragraphs)
    return (
        f"<!doctype html><html><head><title>{title}</title></head><body><main><article>"
        f"<h1>{title}</h1>{body}</article></main><footer>Copyright 2024</footer></body></html>"
    )


PAGES = {
    HIVES: page(
        "Beekeeping log",
        "The swarm from the blue hive was caught by Orla Vance on 14 May.",
        "The red hive needs a varroa check in August.",
    ),
    LAMP: page(
        "Skarvik lighthouse diary",
        "The Skarvik lamp burns 38 litres of paraffin a week in winter.",
        "In summer it burns half of that.",
    ),
    BOATS: page("Boat shed", "The rowing boat was tarred in March."),
}
SEARCHES = {
    QUESTION: [HIVES, LAMP],
    SWARM: [HIVES, BOATS],
    PARAFFIN: [BOATS, LAMP],
    NOWHERE: [],
}
FACTS = {  # a word of the part -> (its fact, the page that holds it)
    "swarm": ("Orla Vance caught the swarm from the blue hive", HIVES),
    "paraffin": ("The Skarvik lamp burns 38 litres of paraffin a week in winter", LAMP),
}


def recorded(store: Store) -> Store:
    """``store`` holding the searches and pages above, as a recording would."""
    for query, urls in SEARCHES.items():
        results = [SearchResult(url, f"{url} title", "a snippet") for url in urls]
        store.put_search(query, results, region="wt-wt", safesearch="moderate", backend="ddg")
    for url, html in PAGES.items():
        data = html.encode("utf-8")
        store.put_page(
            FetchResult(
                url, Outcome.OK, status=200, content_type="text/html", charset="utf-8",
                body=data, bytes=len(data), fetched_at=time.time(),
            )
        )  # fmt: skip
    return store


def kind(messages: list[dict[str, Any]]) -> str:
    content = messages[-1]["content"]
    if SPLIT_MARK in content:
        return "split"
    if CHECK_MARK in content:
        return "check"
    return "read"


@dataclass
class Reader:
    """The scripted model: the split, "ENOUGH", and each part's fact citing its page."""

    split: str = SPLIT
    asked: list[str] = field(default_factory=list)  # the questions it answered

    def __call__(self, messages: list[dict[str, Any]]) -> str:
        call = kind(messages)
        if call == "split":
            return self.split
        if call == "check":
            return "ENOUGH"
        prompt = messages[-1]["content"]
        question = re.findall(r"Question: (.+)", prompt)[-1]
        self.asked.append(question)
        for word, (fact, url) in FACTS.items():
            if word in question.casefold():
                number = re.search(rf"\[(\d+)\] [^\n]*\nURL: {re.escape(url)}", prompt)
                return f"{fact} [{number[1]}]." if number else "The sources do not say."
        return "The sources do not say."


def requests(llm: ScriptedLLM, call: str) -> list[list[dict[str, Any]]]:
    return [body["messages"] for body in llm.requests if kind(body["messages"]) == call]


def agent(url: str, store: Store, events: list[Event], **options: Any) -> Agent:
    """The agent as ``research --reader openai --replay`` builds it, with BM25 only."""
    return Agent(
        sources=[WebSource(WebRecorder(store, replay=True))],
        reader=LLMReader(OpenAIChat(url, MODEL), "openai"),
        counter=ApproxTokenCounter(),
        emit=events.append,
        **{"rounds": 1, "stages": [Stage(BM25Scorer(), 512)], **options},
    )
