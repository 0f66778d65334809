"""The MCP server as an agent sees it: start, web context cold and warm, eight calls at once,
and how soon a cancelled call's work stops.

The server is the real ``htmlrag-chat --replay-db <demo recording> mcp`` process, driven
over stdio by the official SDK's client, with the default first stage (``--pruner fused``)
and the Llama-3 tokenizer. Cancellation is timed two ways, each from the client's cancel:
- ``prune``: a ``web_context`` with every block embedded cold (``--pruner embed``), cancelled
  once the embedding stage has started, until the server logs that the call's worker
  thread has ended (a fresh server and embedding file per run, so the work is always cold);
- ``read``: an ``answer`` whose reader (a scripted OpenAI-compatible server on loopback,
  stalling mid-answer) sees its stream closed.
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import argument_parser, quantiles, write_report
from tests.mcp.servers import (
    QUESTION,
    cancel_at,
    cancel_while_reading,
    stdio_session,
    structured,
    wait_for_line,
)
from tests.mcp.test_stdio import reply
from tests.openai_server import ScriptedLLM, ThreadedLLM

RUNS = 5


def import_demo(folder: Path) -> Path:
    from tests.conftest import import_demo as imported

    return imported(folder)


async def context_figures(recording: Path, tokenizer: str, tmp: Path) -> dict[str, Any]:
    options = ["--replay-db", str(recording), "--tokenizer", tokenizer, "--pruner", "fused"]
    options += ["--reader", "extractive"]
    arguments = {"query": QUESTION["question"], "budget_tokens": 1024}
    start = time.perf_counter()
    async with stdio_session(options, tmp) as session:
        started = time.perf_counter() - start

        async def call() -> float:
            begin = time.perf_counter()
            structured(await session.call_tool("web_context", arguments))
            return (time.perf_counter() - begin) * 1000

        cold = await call()
        warm = [await call() for _ in range(RUNS)]
        begin = time.perf_counter()
        await asyncio.gather(*(call() for _ in range(8)))
        eight = (time.perf_counter() - begin) * 1000
    return {
        "start_to_initialized_s": round(started, 2),
        "web_context_1024_cold_ms": round(cold, 1),
        "web_context_1024_warm_ms": quantiles(warm),
        "eight_at_once_ms": round(eight, 1),
        "eight_one_after_another_ms": round(8 * statistics.median(warm), 1),
    }


async def prune_stop(recording: Path, tmp: Path) -> float:
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "embed"]
    async with stdio_session(options, tmp) as session:
        arguments = {"query": QUESTION["question"]}
        _, cancelled = await cancel_at(session, "web_context", arguments, "embed/score")
        await wait_for_line(tmp / "stderr.log", "cancelled, its work stopped")
        return (time.perf_counter() - cancelled) * 1000


async def read_stops(recording: Path, tmp: Path) -> list[float]:
    llm = ScriptedLLM(reply, hang_after=3)
    stops = []
    with ThreadedLLM(llm) as url:
        options = ["--replay-db", str(recording), "--reader", "openai", "--base-url", url]
        options += ["--model", llm.model, "--pruner", "bm25", "--rounds", "1"]
        async with stdio_session(options, tmp) as session:
            for _ in range(RUNS):
                llm.disconnected.clear()
                stops.append(1000 * await cancel_while_reading(session, QUESTION["question"], llm))
    return stops


def main() -> None:
    args = argument_parser(__doc__, "mcp_server.json").parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        recording = import_demo(tmp)
        context = asyncio.run(context_figures(recording, args.tokenizer, tmp))
        prune = []
        for run in range(RUNS):
            (tmp / str(run)).mkdir()
            prune.append(asyncio.run(prune_stop(recording, tmp / str(run))))
        read = asyncio.run(read_stops(recording, tmp))
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}",
        "tokenizer": Path(args.tokenizer).name,
        **context,
        "cancel_to_prune_stopped_ms": quantiles(prune),
        "cancel_to_read_stopped_ms": quantiles(read),
        "cancel_runs": RUNS,
    }
    print(report)
    write_report(args.out, report)


if __name__ == "__main__":
    main()
