"""Chat app responsiveness: how long a key press waits to be handled while a question runs.

The real app runs headless (Textual's test driver) on the bundled recording, replayed,
with the real two-stage pipeline: the bundled all-MiniLM-L6-v2 embedding stage, then the
generative stage and the local reader (both a random-weight tiny Llama over the real
Llama-3 tokenizer, as in bench/ask.py); the extractive reader is measured too. Every 50 ms
while the question runs (model loading included: the app loads models at start-up), a key
press is posted to the app as the terminal driver would, and the time until the prompt
shows the typed character is recorded. The same is measured with the app idle.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

from textual import events

from benchlib import ROOT, argument_parser, build_model, machine, quantiles, write_report
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.recording import import_jsonl
from htmlrag_chat.tui.app import ChatApp

DEMO = ROOT / "demo"
INTERVAL = 0.05  # seconds between key presses
IDLE_SAMPLES = 40


async def key_latency(app: ChatApp) -> float:
    """Post one key press; ms until the prompt shows it."""
    prompt = app.query_one("#prompt")
    prompt.value = ""
    start = time.perf_counter()
    app.post_message(events.Key("x", "x"))
    while prompt.value != "x":
        await asyncio.sleep(0.0005)
    return (time.perf_counter() - start) * 1000


async def measure(app: ChatApp, question: str) -> dict[str, object]:
    async with app.run_test(size=(120, 36)) as pilot:
        start = time.perf_counter()
        prompt = app.query_one("#prompt")
        prompt.value = question
        await pilot.press("enter")
        busy: list[float] = []
        while not busy or app.running:
            busy.append(await key_latency(app))
            await asyncio.sleep(INTERVAL)
        question_s = time.perf_counter() - start
        idle = []
        for _ in range(IDLE_SAMPLES):
            idle.append(await key_latency(app))
            await asyncio.sleep(INTERVAL)
        (view,) = app.query("AnswerView")
        return {
            "question_s": round(question_s, 2),
            "answer_chars": len(view.text),
            "samples": len(busy),
            "busy_latency_ms": quantiles(busy) | {"max": round(max(busy), 2)},
            "idle_latency_ms": quantiles(idle) | {"max": round(max(idle), 2)},
        }


def main() -> int:
    parser = argument_parser(__doc__, "tui.json")
    parser.add_argument("--max-tokens", type=int, default=128, help="answer tokens")
    args = parser.parse_args()
    device = pick_device()
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    report: dict[str, object] = {
        "machine": machine(device),
        "question": question,
        "interval_ms": INTERVAL * 1000,
    }
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        with Store.open(folder / "recording.db") as store:
            import_jsonl(store, DEMO / "recording.jsonl.gz")
        model = build_model(folder / "model", args.tokenizer, "tiny")
        readers = {
            "local-tiny": ReaderSettings(reader="local", model=model, max_tokens=args.max_tokens),
            "extractive": ReaderSettings(reader="extractive"),
        }
        for name, reader in readers.items():
            # A fresh cache each time: the block embeddings are computed during the question.
            cache_path = folder / f"{name}.db"
            shutil.copy(folder / "recording.db", cache_path)
            options = AgentOptions(
                reader=reader,
                prune=PruneSettings(gen_model=model, device=device, tokenizer=args.tokenizer),
                replay=True,
            )
            with Store.open(cache_path) as cache:
                app = ChatApp(options, cache, ChatSession(cache), export_dir=folder)
                report[name] = asyncio.run(measure(app, question))
            print(name, json.dumps(report[name]), flush=True)
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
