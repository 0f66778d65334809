"""Research in the chat app under Pilot: ``/research`` and the palette's "Research" over the
user's documents, a scripted reader server on loopback splitting the question; the parts'
list live above the report, Esc keeping the parts done."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.research import PartsView
from tests.openai_server import ScriptedLLM, serve_llm
from tests.tui.conftest import SIZE, answers, ask, make_app, options, run, wait_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
QUESTION = (
    "For the logbook: who caught the blue hive's swarm, and how much paraffin does the Skarvik "
    "lamp burn?"
)  # not a plain list of questions: the reader splits it
SWARM = "Who caught the swarm from the blue hive?"
PARAFFIN = "How much paraffin does the Skarvik lamp burn a week in winter?"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "docs")
    return tmp_path / "docs"


def reader(messages: list[dict[str, Any]]) -> str:
    prompt = messages[-1]["content"]
    if "Question to research:" in prompt:
        return f"PART: {SWARM}\nPART: {PARAFFIN}"
    if "Do the sources above contain" in prompt:
        return "ENOUGH"
    asked = prompt.rsplit("Question:", 1)[-1]
    title, fact = (
        ("Lighthouse keeper", "The Skarvik lamp burns 38 litres of paraffin a week in winter")
        if "paraffin" in asked
        else ("Beekeeping log", "Orla Vance caught the swarm from the blue hive")
    )
    number = re.search(rf"\[(\d+)\] {title}", prompt)
    return f"{fact} [{number[1] if number else 1}]."


def parts_shown(app: Any) -> str:
    """The parts' list of the latest research ("" before one is shown)."""
    views = app.query(PartsView)
    return str(views.last().render()) if views else ""


def test_a_research_shows_its_parts_live_and_ends_as_one_report(
    folder: Path, tmp_path: Path
) -> None:
    llm = ScriptedLLM(reader)
    shown: list[str] = []

    async def scenario(cache: Store) -> None:
        async with serve_llm(llm) as url:
            settings = replace(options(replay=False, reader="openai", base_url=url),
                               sources={"docs": (str(folder),)}, web=False)  # fmt: skip
            app = make_app(cache, cache, settings, tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, f"/research {QUESTION}", wait=False)
                await wait_until(pilot, lambda: "(answered)" in parts_shown(app), 60, "part 1")
                shown.append(parts_shown(app))
                await wait_until(pilot, lambda: not app.running, 120, "the report")
                shown.append(parts_shown(app))
                (view,) = answers(app)
                assert view.text.startswith("Orla Vance caught the swarm")
                assert f"### 2. {PARAFFIN}" in view.text
                assert {s.url.rsplit("/", 1)[-1] for s in view.sources} >= {
                    "beekeeping.md", "lighthouse.html",
                }  # fmt: skip
                assert "Researched" not in view.text and "2 parts" not in view.text
        (conversation,) = cache.conversations()
        (message,) = cache.messages(conversation["id"])
        assert message["content"] == QUESTION  # the question, not the command
        assert "### 1. " in message["answers"][0]["text"]

    with Store.open(tmp_path / "cache.sqlite3") as cache:
        run(scenario(cache))
    during, after = shown
    assert f"✓ 1. {SWARM} (answered)" in during
    assert f"2. {PARAFFIN} (running)" in during or f"2. {PARAFFIN} (answered)" in during
    assert after.splitlines() == [f"✓ 1. {SWARM} (answered)", f"✓ 2. {PARAFFIN} (answered)"]


def test_escape_keeps_the_parts_done_as_the_report(folder: Path, tmp_path: Path) -> None:
    def slow(messages: list[dict[str, Any]]) -> str:
        prompt = messages[-1]["content"]
        reading = "Question to research:" not in prompt and "Do the sources" not in prompt
        if reading and "paraffin" in prompt.rsplit("Question:", 1)[-1]:
            return "The lamp burns " * 400
        return reader(messages)

    llm = ScriptedLLM(slow, chunk_delay=0.01)

    async def scenario(cache: Store) -> None:
        async with serve_llm(llm) as url:
            settings = replace(options(replay=False, reader="openai", base_url=url),
                               sources={"docs": (str(folder),)}, web=False)  # fmt: skip
            app = make_app(cache, cache, settings, tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, f"/research {QUESTION}", wait=False)
                await wait_until(pilot, lambda: "The lamp burns" in answers(app)[0].text, 60)
                await pilot.press("escape")
                await wait_until(pilot, lambda: not app.running, 10, "the stop")
                assert f"■ 2. {PARAFFIN} (stopped)" in parts_shown(app)
                (view,) = answers(app)
                assert view.text.startswith("Orla Vance caught the swarm")
                assert "Part 2: stopped before it was answered." in view.text
        (conversation,) = cache.conversations()
        (message,) = cache.messages(conversation["id"])
        assert "Part 2: stopped" in message["answers"][0]["text"]

    with Store.open(tmp_path / "cache.sqlite3") as cache:
        run(scenario(cache))


def test_the_palette_researches_the_question_typed(folder: Path, tmp_path: Path) -> None:
    settings = replace(options(replay=False), sources={"docs": (str(folder),)}, web=False)

    async def scenario(cache: Store) -> None:
        app = make_app(cache, cache, settings, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            app.query_one("#prompt", Input).value = SWARM
            await app.action_research()
            await wait_until(pilot, lambda: "(answered)" in parts_shown(app), 60, "the part")
            await wait_until(pilot, lambda: not app.running, 60, "the report")
            assert parts_shown(app) == f"✓ 1. {SWARM} (answered)"  # extractive: as typed
            assert "Orla Vance" in answers(app)[0].text
            prompt = app.query_one("#prompt", Input)
            prompt.value = "/research   "
            prompt.focus()
            await pilot.press("enter")
            await pilot.pause(0.2)
            assert len(answers(app)) == 1  # nothing to research: a toast, no question
            assert [n.message for n in app._notifications] == ["Give the question after /research."]

    with Store.open(tmp_path / "cache.sqlite3") as cache:
        run(scenario(cache))
