"""``htmlrag-chat --replay-db <recording> mcp`` over stdio, driven by the official SDK's client:
the tools and their schemas, web context within a budget, cited answers kept as
conversations, resources, and a cancelled call that stops the work."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.mcp.servers import (
    COMMAND,
    QUESTION,
    ProgressLog,
    cancel_at,
    cancel_while_reading,
    server_env,
    stdio_session,
    structured,
    wait_for_line,
)
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.smollm2 import ALIAS, llama_server

GOLD_URL = QUESTION["gold_url"]
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_demo(tmp_path_factory.mktemp("mcp-stdio"))


def run(scenario: Any) -> Any:
    return asyncio.run(scenario)


def test_tools_context_answers_and_resources_over_stdio(
    recording: Path, tiny_tokenizer_dir: Path, tiny_counter: Any, tmp_path: Path
) -> None:
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    options += ["--tokenizer", str(tiny_tokenizer_dir)]

    async def scenario() -> None:
        async with stdio_session(options, tmp_path) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert set(tools) == {"web_context", "page_context", "answer", "research"}
            for tool in tools.values():
                assert tool.description and tool.output_schema
                assert tool.input_schema["type"] == "object"
            budget = tools["web_context"].input_schema["properties"]["budget_tokens"]
            assert (budget["default"], budget["minimum"], budget["maximum"]) == (2048, 1, 131072)

            progress = ProgressLog()
            context = structured(
                await session.call_tool(
                    "web_context",
                    {"query": QUESTION["question"], "budget_tokens": 1024},
                    progress_callback=progress,
                )
            )
            urls = [source["url"] for source in context["sources"]]
            assert GOLD_URL in urls
            counted = tiny_counter.count_many([s["content"] for s in context["sources"]])
            assert counted == [s["tokens"] for s in context["sources"]]
            assert context["total_tokens"] == sum(counted) <= 1024
            assert context["exact"] and context["tokenizer"] == tiny_counter.name
            assert [s["number"] for s in context["sources"]] == list(range(1, len(urls) + 1))
            # Every page the search found is a source or left out with a reason.
            left = {page["url"]: page["reason"] for page in context["left_out"]}
            assert len(urls) + len(left) == 5 and all(left.values())
            assert any(m.startswith("fetch 5/5") for m in progress.messages)
            assert any(m.startswith("bm25/prune done") for m in progress.messages)

            markdown = structured(
                await session.call_tool(
                    "web_context",
                    {"query": QUESTION["question"], "budget_tokens": 512, "format": "markdown"},
                )
            )
            gold = next(s for s in markdown["sources"] if s["url"] == GOLD_URL)
            assert "<p>" not in gold["content"] and "ARKit" in gold["content"]
            assert markdown["total_tokens"] <= 512

            page = structured(
                await session.call_tool(
                    "page_context", {"url": GOLD_URL, "query": "ARKit depth map"}
                )
            )
            (source,) = page["sources"]
            assert source["url"] == GOLD_URL and "ARKit" in source["content"]

            first = structured(
                await session.call_tool("answer", {"question": QUESTION["question"]})
            )
            numbers = {source["number"] for source in first["sources"]}
            cited = {int(n) for n in CITATION.findall(first["answer"])}
            assert cited and cited <= numbers
            assert first["sentences"] and all(
                set(c["cited"]) <= numbers for c in first["sentences"]
            )
            gold_number = next(s["number"] for s in first["sources"] if s["url"] == GOLD_URL)
            assert gold_number in cited and "ARKit" in first["answer"]
            # Each sentence with the words of its source that back it.
            quotes = [q for c in first["sentences"] for q in c["citations"] if q["backs"]]
            assert any(q["url"] == GOLD_URL and "ARKit" in q["quote"] for q in quotes)
            # What the question did, from the agent's record: its one search, each page
            # fetched either a source or left out with why.
            assert first["queries"] == [QUESTION["question"]] and first["skipped_queries"] == []
            assert {s["url"] for s in first["sources"]}.isdisjoint(
                page["url"] for page in first["left_out"]
            )
            assert all(page["reason"] for page in first["left_out"])
            conversation = first["conversation_id"]
            follow = structured(
                await session.call_tool(
                    "answer", {"question": "What does it adjust?", "conversation_id": conversation}
                )
            )
            assert follow["conversation_id"] == conversation

            listed = await session.read_resource("htmlrag-chat://conversations")
            assert f'"id": {conversation}' in listed.contents[0].text
            kept = await session.read_resource(f"htmlrag-chat://conversations/{conversation}")
            text = kept.contents[0].text
            assert QUESTION["question"] in text and "What does it adjust?" in text
            cached = await session.read_resource(f"htmlrag-chat://pages/{GOLD_URL}")
            assert "BEGIN SOURCE 1" in cached.contents[0].text
            assert "ARKit" in cached.contents[0].text

            missing = await session.call_tool(
                "answer", {"question": "x", "conversation_id": conversation + 99}
            )
            assert missing.is_error and "no conversation" in missing.content[0].text

    run(scenario())


ANSWER = "FaceTime uses ARKit to map the face and move the eyes [1]. " * 20


def reply(messages: list[dict[str, Any]]) -> str:
    """A plan for the rewrite request (its last message asks about the new message), else
    the reader's answer."""
    return "SEARCH: ARKit" if "New message:" in messages[-1]["content"] else ANSWER


def test_a_cancelled_call_stops_the_answer_and_the_server_goes_on(
    recording: Path, tmp_path: Path
) -> None:
    llm = ScriptedLLM(reply, hang_after=3)  # the answer stalls after three words

    async def scenario(url: str) -> float:
        options = ["--replay-db", str(recording), "--reader", "openai", "--base-url", url]
        options += ["--model", llm.model, "--pruner", "bm25", "--rounds", "1"]
        async with stdio_session(options, tmp_path) as session:
            stopped = await cancel_while_reading(session, QUESTION["question"], llm)
            await wait_for_line(tmp_path / "stderr.log", "cancelled, its work stopped")
            # The server is free for the next call.
            context = structured(
                await session.call_tool("web_context", {"query": QUESTION["question"]})
            )
            assert context["sources"]
            return stopped

    with ThreadedLLM(llm) as url:
        stopped = run(scenario(url))
    print(f"stopped {stopped * 1000:.0f} ms after the cancel")


def test_a_cancelled_call_stops_the_pruning_in_its_worker_thread(
    recording: Path, tmp_path: Path
) -> None:
    """Every block embedded cold (``--pruner embed``): seconds of CPU work in a thread,
    stopped at its next check once the call is cancelled."""
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "embed"]
    log = tmp_path / "stderr.log"

    async def scenario() -> float:
        async with stdio_session(options, tmp_path) as session:
            arguments = {"query": QUESTION["question"]}
            _, cancelled = await cancel_at(session, "web_context", arguments, "embed/score")
            await wait_for_line(log, "cancelled, its work stopped")
            return time.perf_counter() - cancelled

    stopped = run(scenario())
    print(f"pruning stopped {stopped * 1000:.0f} ms after the cancel")


def test_the_context_tools_run_one_round_and_never_ask_an_llm_reader(
    recording: Path, tmp_path: Path
) -> None:
    """With a real LLM reader (SmolLM2 behind llama-cpp-python's own server) and the
    default settings (two rounds), ``web_context`` and ``page_context`` search once and
    send the reader nothing: no plan, no sufficiency check. The server's access log shows
    every request it got; the budget's token counts show up there, the chat never does."""
    with llama_server(tmp_path) as server:
        options = ["--replay-db", str(recording), "--reader", "openai"]
        options += ["--base-url", server.base_url, "--model", ALIAS, "--pruner", "bm25"]

        async def scenario() -> tuple[ProgressLog, dict[str, Any], dict[str, Any]]:
            async with stdio_session(options, tmp_path) as session:
                progress = ProgressLog()
                arguments = {"query": QUESTION["question"], "budget_tokens": 1024}
                context = await session.call_tool(
                    "web_context", arguments, progress_callback=progress
                )
                page = await session.call_tool(
                    "page_context", {"url": GOLD_URL, "query": "ARKit depth map"}
                )
                return progress, structured(context), structured(page)

        progress, context, page = run(scenario())
        requests = [line for line in server.log.read_text().splitlines() if '"POST /' in line]
    assert any("/extras/tokenize/count" in line for line in requests)  # the log is read
    assert not [line for line in requests if "/chat/completions" in line]
    assert [m for m in progress.messages if m.startswith("round ")] == [
        f"round 1 (as typed): {QUESTION['question']}"
    ]
    assert not any(m.startswith(("plan", "check")) for m in progress.messages)
    assert GOLD_URL in [source["url"] for source in context["sources"]]
    assert [source["url"] for source in page["sources"]] == [GOLD_URL]


def test_conversation_ids_beyond_any_row_are_refused_without_a_traceback(
    recording: Path, tiny_tokenizer_dir: Path, tmp_path: Path
) -> None:
    """10**22 is past SQLite's 64-bit integers, and "²" is a digit to ``str.isdigit`` but
    no number to ``int``: each is a conversation that does not exist, said to the agent in
    one line, with nothing in the server's log."""
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    options += ["--tokenizer", str(tiny_tokenizer_dir)]

    async def scenario() -> tuple[list[str], list[str]]:
        async with stdio_session(options, tmp_path) as session:
            tools = []
            for conversation_id in (10**22, -(10**22), -1):
                result = await session.call_tool(
                    "answer", {"question": "x", "conversation_id": conversation_id}
                )
                assert result.is_error
                tools.append(result.content[0].text)
            resources = []
            for name in ("10000000000000000000000", "²", "١٢"):
                with pytest.raises(MCPError) as raised:
                    await session.read_resource(f"htmlrag-chat://conversations/{name}")
                resources.append(raised.value.error.message)
            return tools, resources

    tools, resources = run(scenario())
    assert [text.removeprefix("Error executing tool answer: ") for text in tools] == [
        f"no conversation {n}" for n in (10**22, -(10**22), -1)
    ]
    assert all(
        message.endswith(f"no conversation {name}")
        for message, name in zip(resources, ("10000000000000000000000", "²", "١٢"), strict=True)
    ), resources
    log = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Traceback" not in log and "Error" not in log, log


def test_an_answer_split_in_utf16_halves_and_a_hostile_title_come_back_whole_and_safe(
    recording: Path, tmp_path: Path
) -> None:
    """The ``answer`` tool once returned only "Error executing tool answer" when the reader
    server cut an emoji into two escaped halves; the conversations resource listed a
    title's bidi override and C1 control (a question an agent sent) as they were."""

    def split_emoji(messages: list[dict[str, Any]]) -> str:
        if "New message:" in messages[-1]["content"]:
            return "SEARCH: ARKit"
        return "FaceTime uses ARKit 😀 [1]. A lone \ud83d half."

    llm = ScriptedLLM(split_emoji, model="otter-\ud83d", utf16=True)
    cache = tmp_path / "cache.db"
    cache.write_bytes(recording.read_bytes())
    with Store.open(cache) as store:
        ChatSession(store).question_asked("safe?\u202egnp.exe\u009b2J")

    async def scenario(url: str) -> None:
        options = ["--cache", str(cache), "--reader", "openai", "--base-url", url]
        options += ["--pruner", "bm25", "--rounds", "1", "--no-correct-citations"]
        async with stdio_session(options, tmp_path) as session:
            answer = {"question": QUESTION["question"]}
            answered = structured(await session.call_tool("answer", answer))
            assert answered["answer"] == "FaceTime uses ARKit 😀 [1]. A lone \ufffd half."
            listed = await session.read_resource("htmlrag-chat://conversations")
            text = listed.contents[0].text
            assert "safe?gnp.exe2J" in text and "\u202e" not in text and "\u009b" not in text

    with ThreadedLLM(llm) as url:
        run(scenario(url))


def test_initialize_is_answered_while_the_models_are_still_loading(
    recording: Path, tiny_tokenizer_dir: Path, tmp_path: Path
) -> None:
    """The loading is held for as long as the test likes, with no clock: the tokenizer's
    tokenizer_config.json is a named pipe, which the loading blocks reading until the test
    writes it. ``initialize`` and the tool list come back meanwhile; a tool call waits for
    the loading and then uses what it loaded. On 3afc709 the models loaded before the first
    request was read, so ``initialize`` waited for the pipe (11.7 s of real loading under
    load, past a client's patience)."""
    tokenizer = tmp_path / "tokenizer"
    shutil.copytree(tiny_tokenizer_dir, tokenizer)
    config = tokenizer / "tokenizer_config.json"
    content = config.read_bytes()
    config.unlink()
    os.mkfifo(config)
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    params = StdioServerParameters(
        command=COMMAND[0],
        args=[*COMMAND[1:], *options, "--tokenizer", str(tokenizer), "mcp"],
        env=server_env(tmp_path),
    )

    def release() -> None:  # opening the pipe waits for its reader: the loading
        with config.open("wb") as pipe:
            pipe.write(content)

    async def scenario() -> None:
        releaser = threading.Thread(target=release, daemon=True)
        with (tmp_path / "stderr.log").open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as s:
                try:
                    await asyncio.wait_for(s.initialize(), 120)  # long before the pipe is read
                    tools = {tool.name for tool in (await s.list_tools()).tools}
                    assert tools == {"web_context", "page_context", "answer", "research"}
                    # A research asked now waits for the loading too (it once read the
                    # parts before they were loaded, and failed).
                    researching = asyncio.create_task(
                        s.call_tool(
                            "research",
                            {"question": QUESTION["question"], "parts": [QUESTION["question"]]},
                        )
                    )
                    await asyncio.sleep(0.5)
                    assert not researching.done()
                finally:
                    releaser.start()  # else the server would wait for it to its end
                report = structured(await asyncio.wait_for(researching, 120))
                assert [part["state"] for part in report["parts"]] == ["answered"]
                context = structured(
                    await s.call_tool(
                        "web_context", {"query": QUESTION["question"], "budget_tokens": 512}
                    )
                )
                assert context["exact"] and GOLD_URL in [x["url"] for x in context["sources"]]
        releaser.join(10)

    run(scenario())


def test_models_that_cannot_load_are_each_calls_error_and_one_line_on_stderr(
    recording: Path, tmp_path: Path
) -> None:
    """The server answers ``initialize`` before it knows; then every tool call says why
    it cannot answer (the one line ``ask`` prints), and stderr says it once."""
    missing = tmp_path / "no-such.gguf"
    options = ["--replay-db", str(recording), "--reader", "local", "--model", str(missing)]

    async def scenario() -> None:
        async with stdio_session(options, tmp_path) as session:
            for _ in range(2):
                result = await session.call_tool("web_context", {"query": QUESTION["question"]})
                assert result.is_error and f"{missing}: no such GGUF file" in (
                    result.content[0].text
                )

    run(scenario())
    said = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert said.count(f"htmlrag-chat mcp: the tools cannot answer: {missing}: no such") == 1
