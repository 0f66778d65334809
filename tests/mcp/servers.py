"""Starting ``htmlrag-chat mcp`` as a real subprocess, and the official SDK's clients on it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.mcp.flood import file_limit
from tests.openai_server import ScriptedLLM

DEMO = Path(__file__).resolve().parents[2] / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
COMMAND = [sys.executable, "-m", "htmlrag_chat"]


def server_env(tmp: Path) -> dict[str, str]:
    """The tests' environment (no port probed, no hub), embeddings in a file of this test."""
    return {**os.environ, "HTMLRAG_CHAT_DERIVED": str(tmp / "derived.sqlite3")}


@asynccontextmanager
async def stdio_session(options: list[str], tmp: Path) -> AsyncIterator[ClientSession]:
    """``htmlrag-chat OPTIONS mcp`` over stdio, its stderr in ``tmp/stderr.log``."""
    params = StdioServerParameters(
        command=COMMAND[0], args=[*COMMAND[1:], *options, "mcp"], env=server_env(tmp)
    )
    with (tmp / "stderr.log").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as streams, ClientSession(*streams) as s:
            await s.initialize()
            yield s


@dataclass
class Watched:
    """What ``http_server`` says of the server it ran: its process and its stderr."""

    pid: int = 0
    lines: list[str] = field(default_factory=list)

    def sockets(self) -> int:
        """How many sockets the server holds open now (Linux: its descriptors)."""
        folder = Path(f"/proc/{self.pid}/fd")
        count = 0
        for name in os.listdir(folder):
            with contextlib.suppress(OSError):  # closed meanwhile
                count += os.readlink(folder / name).startswith("socket:")
        return count


@contextmanager
def http_server(
    options: list[str],
    tmp: Path,
    env: dict[str, str] | None = None,
    files: int | None = None,
    watched: Watched | None = None,
) -> Iterator[tuple[str, str | None]]:
    """``htmlrag-chat OPTIONS mcp --http --port 0``; yields the URL it says it listens at,
    and the token it says it made (None when it says none: one was configured). ``files``
    lowers the server's open-file limit; ``watched`` gets its process id and every line of
    its stderr, and the server must still be running when the block ends."""
    process = subprocess.Popen(
        [*COMMAND, *options, "mcp", "--http", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**server_env(tmp), **(env or {})},
        preexec_fn=None if files is None else file_limit(files),
    )
    lines: queue.Queue[str] = queue.Queue()
    if watched is not None:
        watched.pid = process.pid

    def drain() -> None:  # keeps reading, so the pipe never fills
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=drain, daemon=True).start()
    try:
        seen, token = [], None
        while True:
            line = lines.get(timeout=180)
            seen.append(line)
            if "mcp: token: " in line:
                token = line.split("mcp: token: ")[1].split()[0]
            if "listening on " in line:
                yield line.split("listening on ")[1].strip(), token
                break
            assert process.poll() is None, "".join(seen)
        if watched is not None:
            assert process.poll() is None, "the server ended"
    finally:
        process.terminate()
        process.wait(20)
        if watched is not None:
            watched.lines += seen + list(lines.queue)


@asynccontextmanager
async def http_session(
    url: str, token: str | None, statuses: list[int] | None = None
) -> AsyncIterator[ClientSession]:
    """The SDK's streamable HTTP client, sending ``token`` as its bearer token (if any);
    the status of each response it gets goes into ``statuses``."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else None
    client = create_mcp_http_client(headers=headers)

    async def record(response: Any) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    client.event_hooks["response"].append(record)
    async with (
        client,
        streamable_http_client(url, http_client=client) as streams,
        ClientSession(*streams) as session,
    ):
        await session.initialize()
        yield session


class ProgressLog:
    """A progress callback that keeps every message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def cancel_at(
    session: ClientSession, tool: str, arguments: dict[str, Any], stage: str
) -> tuple[ProgressLog, float]:
    """Call ``tool`` and cancel the call once its progress names ``stage``; returns the
    progress seen and when the call was cancelled (``time.perf_counter``)."""
    progress = ProgressLog()
    call = asyncio.create_task(session.call_tool(tool, arguments, progress_callback=progress))
    deadline = time.monotonic() + 120
    while not any(m.startswith(stage) for m in progress.messages):
        assert time.monotonic() < deadline and not call.done(), progress.messages
        await asyncio.sleep(0.02)
    cancelled = time.perf_counter()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert not any(m.startswith(f"{stage} done") for m in progress.messages)
    return progress, cancelled


async def cancel_while_reading(session: ClientSession, question: str, llm: ScriptedLLM) -> float:
    """Cancel an ``answer`` once its reader has started (``llm`` stalls mid-answer); returns
    the seconds until ``llm`` saw its stream closed: the work stopped, not only the wait."""
    _, cancelled = await cancel_at(session, "answer", {"question": question}, "read")
    while not llm.disconnected.is_set():
        assert time.perf_counter() - cancelled < 10, "the answer was not stopped"
        await asyncio.sleep(0.01)
    return time.perf_counter() - cancelled


async def wait_for_line(log: Path, text: str, seconds: float = 10) -> None:
    """Wait until the server's stderr (written to ``log``) has a line with ``text``."""
    deadline = time.monotonic() + seconds
    while text not in log.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, f"no {text!r} in: {log.read_text(encoding='utf-8')}"
        await asyncio.sleep(0.01)
