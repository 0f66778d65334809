"""The reader in the header and switched from the command palette, under Pilot: a scripted
OpenAI-compatible server on a free loopback port stands in for Ollama, found by the probe."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets._header import HeaderTitle

from htmlrag_chat.reader.extractive import HEADER
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from htmlrag_chat.tui.readers import reader_choices
from tests.openai_server import ScriptedLLM, ThreadedLLM, serve_llm
from tests.tui.conftest import (
    QUESTION,
    SIZE,
    answers,
    ask,
    make_app,
    options,
    run,
    scripted,
    wait_until,
)

LLAMA, QWEN = "llama-3.1-8b-instruct", "qwen2.5-7b-instruct"


def header(app: ChatApp) -> str:
    return str(app.query_one(HeaderTitle).render())


async def choose(pilot: Pilot[None], typed: str, title: str) -> None:
    """Open the palette, type, and run the command once ``title`` is highlighted."""
    await pilot.press("ctrl+p", *typed)

    def highlighted() -> bool:
        if not isinstance(pilot.app.screen, CommandPalette):
            return False
        commands = pilot.app.screen.query_one(CommandList)
        index = commands.highlighted
        if index is None:
            return False
        prompt = str(commands.get_option_at_index(index).prompt)  # the title, then the help
        return prompt.splitlines()[0] == title

    await wait_until(pilot, highlighted, 10, f"{title!r} in the palette")
    await pilot.press("enter")


def test_the_header_names_the_found_server_and_the_palette_switches_reader(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    llm = ScriptedLLM(
        scripted(answer=f"Its depth map comes from {QUESTION['answers'][0]} [1]."),
        model=QWEN,
        also_listed=[LLAMA, "nomic-embed-text:latest"],
    )

    async def scenario(url: str) -> None:
        address = urlsplit(url).netloc
        found = options(reader="auto", probe_ports=(urlsplit(url).port,))
        app = make_app(cache, history, found, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            named = f"htmlrag-chat · {LLAMA} on the server at {address}"  # Llama 3 first
            await wait_until(pilot, lambda: header(app).startswith(named), 60, "the name")
            await ask(pilot, QUESTION["question"])
            answered = [request for request in llm.requests if request["stream"]][-1]
            assert answered["model"] == LLAMA
            assert "ARKit [" in answers(app)[-1].text

            await choose(pilot, "qwen2.5", f"Reader: {QWEN} on the server at {address}")
            await wait_until(pilot, lambda: QWEN in header(app), 60, "the switch")
            status = str(app.query_one("#status").render())
            assert status == f"ready: {QWEN} on the server at {address} answers from now on"
            await ask(pilot, "And which sensor?")
            assert llm.requests[-1]["model"] == QWEN

            asked = len(llm.requests)
            await choose(pilot, "extractive", "Reader: extractive (no LLM)")
            extractive = "htmlrag-chat · extractive (no LLM)"
            await wait_until(pilot, lambda: header(app).startswith(extractive), 60)
            await ask(pilot, QUESTION["question"])
            assert answers(app)[-1].text.startswith(HEADER) and len(llm.requests) == asked

    with ThreadedLLM(llm) as url:  # its own loop: the app's busy one must not slow the probe
        run(scenario(url))


def test_the_palette_offers_chat_models_and_a_local_model_on_disk(tiny_lm_dir: Path) -> None:
    llm = ScriptedLLM(lambda messages: "", model=LLAMA, also_listed=["bge-m3", QWEN])

    async def scenario() -> list[str]:
        async with serve_llm(llm) as url:
            settings = ReaderSettings(
                model=str(tiny_lm_dir), probe_ports=(urlsplit(url).port or 0,)
            )
            choices = await asyncio.to_thread(reader_choices, settings)
            switched = {choice.title: choice.settings for choice in choices}
            qwen = switched[f"Reader: {QWEN} on the server at {urlsplit(url).netloc}"]
            assert (qwen.reader, qwen.base_url, qwen.model) == ("openai", url, QWEN)
            local = switched[f"Reader: {tiny_lm_dir.name} (transformers)"]
            assert (local.reader, local.model, local.base_url) == ("local", str(tiny_lm_dir), None)
            return list(switched)

    titles = asyncio.run(scenario())
    assert titles[0] == "Reader: extractive (no LLM)" and len(titles) == 5  # no bge-m3
    # Last, auto and what it picks now: a found server must list the model named, so the
    # model on disk.
    assert titles[-1] == f"Reader: auto, now {tiny_lm_dir.name} (transformers)"
    # Nothing on disk, no server: the extractive reader alone, which auto also picks.
    nothing = [c.title for c in reader_choices(ReaderSettings(probe_ports=()))]
    assert nothing == [titles[0], "Reader: auto, now extractive (no LLM)"]
