"""The chat app under Pilot: the real app on real SQLite files, replaying the bundled
recording, answered by the extractive reader, a scripted OpenAI-compatible server over
loopback, or a tiny local model."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input

from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from htmlrag_chat.tui.transcript import AnswerView
from tests.conftest import import_demo

DEMO = Path(__file__).resolve().parents[2] / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
GOLD = QUESTION["answers"][0]
SIZE = (120, 36)
REWRITE_MARK = "New message:"
CHECK_MARK = "Do the sources above contain"


@pytest.fixture(scope="session")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled recording imported into a cache, once (replays only read it)."""
    return import_demo(tmp_path_factory.mktemp("recording"))


@pytest.fixture
def cache(recorded: Path) -> Iterator[Store]:
    with Store.open(recorded, readonly=True) as store:
        yield store


@pytest.fixture
def history_path(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


@pytest.fixture
def history(history_path: Path) -> Iterator[Store]:
    """Where the app keeps conversations: a file that outlives one app (see reopen tests)."""
    with Store.open(history_path) as store:
        yield store


def options(replay: bool = True, **reader: Any) -> AgentOptions:
    """Extractive answers over BM25 pruning unless told otherwise: deterministic and fast."""
    return AgentOptions(
        reader=ReaderSettings(**({"reader": "extractive"} | reader)),
        prune=PruneSettings(pruner="bm25", budget=1024),
        rounds=1,
        pages=6,
        replay=replay,
    )


def make_app(
    cache: Store, history: Store, agent_options: AgentOptions, export_dir: Path, **kwargs: Any
) -> ChatApp:
    session = ChatSession(history, kept=history is cache)
    return ChatApp(agent_options, cache, session, export_dir=export_dir, **kwargs)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


async def wait_until(
    pilot: Pilot, predicate: Callable[[], bool], timeout: float = 60.0, what: str = ""
) -> None:
    """Let the app run until ``predicate`` holds (a question runs in workers and threads)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)


async def ask(pilot: Pilot[None], question: str, wait: bool = True, typed: bool = False) -> None:
    """Paste the question into the prompt (the terminal's paste event, one for the whole
    text; ``typed``: a key press a character, which Pilot paces at about 80 ms each) and
    press Enter, as a person does; by default wait until the question has ended (answered,
    stopped or failed)."""
    app = pilot.app
    assert isinstance(app, ChatApp)
    asked = len(answers(app)) + 1
    prompt = app.query_one("#prompt", Input)
    prompt.focus()
    if typed:
        await pilot.press(*question)
    else:
        prompt.post_message(events.Paste(question))
        await wait_until(pilot, lambda: prompt.value.endswith(question), 10, "the paste")
    await pilot.press("enter")
    await wait_until(pilot, lambda: len(answers(app)) == asked, 10, "the question to start")
    if wait:
        await wait_until(pilot, lambda: not app.running, 120, "the question to end")


def answers(app: ChatApp) -> list[AnswerView]:
    return list(app.query(AnswerView))


def scripted(
    answer: str = f"FaceTime Attention Correction uses {GOLD} for the depth map [3].",
    rewrite: str = "NO SEARCH",
) -> Callable[[list[dict[str, Any]]], str]:
    """A server model: routed by the prompt, like the agent tests' script."""

    def reply(messages: list[dict[str, Any]]) -> str:
        prompt = messages[-1]["content"]
        if REWRITE_MARK in prompt:
            return rewrite
        if CHECK_MARK in prompt:
            return "ENOUGH"
        return answer

    return reply
