"""A question handed to the service over its real Unix socket: the same answer as in
process, only this user's service with the same settings, and a hang-up that stops it.

The service runs on the parts ``ask --reader openai --replay`` builds (a scripted server
on loopback, the demo recording), in this process's event loop; the client is ``ask``'s.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.assembly.wiring import AgentOptions, Parts, build_parts
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import AnswerDelta, Event, Notice, SourcesReady
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.service import place
from htmlrag_chat.service.client import connect
from htmlrag_chat.service.server import Service, serve
from htmlrag_chat.service.wire import fingerprint, to_wire
from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.openai_server import ScriptedLLM, ThreadedLLM

DEMO = Path(__file__).resolve().parents[2] / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
ANSWER = "FaceTime Attention Correction uses ARKit to grab a depth map of the face [1]."


def reply(messages: list[dict[str, Any]]) -> str:
    content = messages[-1]["content"]
    if "Do the sources above contain" in content:
        return "ENOUGH"
    return "SEARCH: ARKit depth map" if "New message:" in content else ANSWER


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's runtime folder, this test's own."""
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder / "htmlrag-chat"


@pytest.fixture
def llm() -> Iterator[tuple[ScriptedLLM, str]]:
    scripted = ScriptedLLM(reply=reply, chunk_delay=0.01)
    with ThreadedLLM(scripted) as url:
        yield scripted, url


def options(url: str, tokenizer: Path, budget: int = 1024) -> AgentOptions:
    return AgentOptions(
        reader=ReaderSettings(reader="openai", base_url=url, model="scripted-llm", judge="off"),
        prune=PruneSettings(pruner="bm25", tokenizer=str(tokenizer), budget=budget),
        replay=True,
    )


def with_service(
    parts: Parts, cache: Store, digest: str, work: Callable[[], Awaitable[Any]]
) -> Any:
    """``work()`` while the service listens; the service stopped after it."""

    async def main() -> Any:
        said: list[str] = []
        serving = asyncio.ensure_future(serve(Service(parts, cache, digest), said.append))
        while not said:
            await asyncio.sleep(0.01)
            if serving.done():
                serving.result()
        try:
            return await work()
        finally:
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)

    return asyncio.run(main())


def comparable(answer: Answer) -> object:
    """The answer as ``ask`` shows and keeps it, its timings aside."""
    record: Any = to_wire(answer)
    for key in ("first_token_ms", "total_ms"):
        record.pop(key)
    record["research"].pop("timings")
    return record


def test_the_service_answers_as_the_process_would_and_says_so(
    tmp_path: Path, runtime: Path, llm: tuple[ScriptedLLM, str], tiny_tokenizer_dir: Path
) -> None:
    path = import_demo(tmp_path)
    settings = options(llm[1], tiny_tokenizer_dir)
    with Store.open(path, readonly=True) as cache:
        parts = build_parts(settings, cache, lambda event: None)
        digest = fingerprint(settings, cache.path)
        events: list[Event] = []

        async def ask() -> Answer:
            call = await connect(digest, QUESTION, [], events.append)
            assert call is not None
            # The socket, its folder and the file beside it are this user's alone.
            assert (
                runtime.stat().st_mode & 0o777,
                os.stat(call.running.socket).st_mode & 0o777,
            ) == (
                0o700,
                0o600,
            )
            assert (runtime / place.INFO).stat().st_mode & 0o777 == 0o600
            return await call.answer(events.append)

        served = with_service(parts, cache, digest, ask)
        here: list[Event] = []
        local = asyncio.run(parts.agent(cache, here.append).ask(QUESTION))
    assert comparable(served) == comparable(local)
    assert served.text == ANSWER and served.claims[0].supported
    assert served.sources[0].url.startswith("https://www.theverge")
    [said] = [e.message for e in events if isinstance(e, Notice)]
    assert said.startswith(f"answered by the htmlrag-chat service (pid {os.getpid()}")
    # The question's progress came through as the events themselves, in order.
    kinds = [type(e).__name__ for e in events if not isinstance(e, Notice)]
    assert kinds == [type(e).__name__ for e in here]
    assert any(isinstance(e, SourcesReady) for e in events)
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == ANSWER
    assert not runtime.joinpath(place.SOCKET).exists()  # stopped: nothing left behind


def test_other_settings_or_a_folder_open_to_others_keep_the_question_here(
    tmp_path: Path, runtime: Path, llm: tuple[ScriptedLLM, str], tiny_tokenizer_dir: Path
) -> None:
    path = import_demo(tmp_path)
    settings = options(llm[1], tiny_tokenizer_dir)
    other = fingerprint(options(llm[1], tiny_tokenizer_dir, budget=2048), path)
    with Store.open(path, readonly=True) as cache:
        parts = build_parts(settings, cache, lambda event: None)
        digest = fingerprint(settings, cache.path)
        assert other != digest
        notes: list[Event] = []

        async def ask_twice() -> tuple[object, object]:
            refused = await connect(other, QUESTION, [], notes.append)
            runtime.chmod(0o755)  # a folder others may enter is never used
            try:
                ignored = await connect(digest, QUESTION, [], notes.append)
            finally:
                runtime.chmod(0o700)
            return refused, ignored

        refused, ignored = with_service(parts, cache, digest, ask_twice)
    assert refused is None and ignored is None
    first, second = (e.message for e in notes if isinstance(e, Notice))
    assert "did not take the question (it runs with other settings" in first
    assert "not used" in second and "open to others (755, not 700)" in second
    assert llm[0].requests == []  # no question reached the reader


def test_a_wrong_token_is_refused(
    tmp_path: Path, runtime: Path, llm: tuple[ScriptedLLM, str], tiny_tokenizer_dir: Path
) -> None:
    path = import_demo(tmp_path)
    settings = options(llm[1], tiny_tokenizer_dir)
    with Store.open(path, readonly=True) as cache:
        parts = build_parts(settings, cache, lambda event: None)
        digest = fingerprint(settings, cache.path)

        async def forged() -> dict[str, Any]:
            reader, writer = await asyncio.open_unix_connection(runtime / place.SOCKET)
            request = {"token": "0" * 64, "fingerprint": digest, "question": QUESTION}
            writer.write(json.dumps(request).encode() + b"\n")
            answer = json.loads(await reader.readline())
            writer.close()
            return answer

        assert with_service(parts, cache, digest, forged) == {"refused": "a wrong token"}
    assert llm[0].requests == []


def test_hanging_up_stops_the_question_in_the_service(
    tmp_path: Path, runtime: Path, llm: tuple[ScriptedLLM, str], tiny_tokenizer_dir: Path
) -> None:
    path = import_demo(tmp_path)
    scripted = llm[0]
    scripted.chunk_delay = 0.5  # an answer that takes seconds to stream
    settings = replace(options(llm[1], tiny_tokenizer_dir), rounds=1)
    with Store.open(path, readonly=True) as cache:
        parts = build_parts(settings, cache, lambda event: None)
        digest = fingerprint(settings, cache.path)

        async def hang_up() -> None:
            events: list[Event] = []
            call = await connect(digest, QUESTION, [], events.append)
            assert call is not None
            answering = asyncio.ensure_future(call.answer(events.append))
            while not any(isinstance(e, AnswerDelta) for e in events):
                await asyncio.sleep(0.01)
            answering.cancel()  # Ctrl+C in ask: the connection closes
            await asyncio.gather(answering, return_exceptions=True)
            # The reader's server sees the answer's stream closed: the service stopped it.
            for _ in range(500):
                if scripted.disconnected.is_set():
                    return
                await asyncio.sleep(0.01)

        with_service(parts, cache, digest, hang_up)
    assert scripted.disconnected.is_set()


def test_a_failed_question_comes_back_as_its_one_line(
    tmp_path: Path, runtime: Path, llm: tuple[ScriptedLLM, str], tiny_tokenizer_dir: Path
) -> None:
    path = import_demo(tmp_path)
    settings = options(llm[1], tiny_tokenizer_dir)
    with Store.open(path, readonly=True) as cache:
        parts = build_parts(settings, cache, lambda event: None)
        digest = fingerprint(settings, cache.path)

        async def unrecorded() -> None:
            call = await connect(digest, "a question nobody recorded", [], lambda e: None)
            assert call is not None
            await call.answer(lambda e: None)

        with pytest.raises(UserError, match="none of the searches is in the recording"):
            with_service(parts, cache, digest, unrecorded)
