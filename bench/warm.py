"""Where the process lives on, the second question pays no load: the chat app and the MCP
server, each asked the demo question twice (the second time in a new conversation).

The bundled recording (demo/) is replayed through the real two-stage pipeline (the bundled
all-MiniLM-L6-v2, then the generative stage) and the local reader; both language models are
random-weight Llamas over the real Llama-3 tokenizer (``tiny``, as in bench/ask.py), so the
figures measure the machinery, not answers. For each face: the models' load (the app's
start-up until it says it is ready; ``build_parts`` for the MCP server), then per question
the time from the question (Enter in the app, the tool call for the server) to the first
answer token, and how many models loaded meanwhile (``loader.load_count``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchlib import ROOT, argument_parser, build_model, machine, write_report
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.base.events import AnswerDelta, Event
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.loader import load_count
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.recording import import_jsonl
from htmlrag_chat.tui.app import READY, ChatApp
from htmlrag_chat.tui.messages import PipelineEvent
from htmlrag_chat.tui.transcript import ErrorView

DEMO = ROOT / "demo"


def first_token_clock() -> tuple[list[float], Callable[[Event], None]]:
    """A list that gets the time of the first answer token, and the event sink that fills it."""
    seen: list[float] = []

    def emit(event: Event) -> None:
        if isinstance(event, AnswerDelta) and not seen:
            seen.append(time.perf_counter())

    return seen, emit


async def chat_app(
    options: AgentOptions, cache: Store, history: Store, question: str, wait_s: float
) -> dict:
    seen: list[float] = []

    def hook(message: object) -> None:
        answering = isinstance(message, PipelineEvent) and isinstance(message.event, AnswerDelta)
        if answering and not seen:
            seen.append(time.perf_counter())

    async def until(done: Callable[[], bool], what: str) -> None:
        """Wait for ``done``; past the deadline, fail with what the app shows instead."""
        deadline = time.perf_counter() + wait_s
        while not done():
            if time.perf_counter() > deadline:
                shown = [str(view.render()) for view in app.query(ErrorView)]
                status = str(app.query_one("#status").render())
                raise RuntimeError(f"no {what} in {wait_s} s; status {status!r}; errors {shown}")
            await pilot.pause(0.01)

    app = ChatApp(options, cache, ChatSession(history), export_dir=Path(tempfile.gettempdir()))
    before = load_count()
    start = time.perf_counter()
    async with app.run_test(size=(120, 36), message_hook=hook) as pilot:
        await until(lambda: READY in str(app.query_one("#status").render()), "ready line")
        result: dict[str, object] = {
            "load_s": round(time.perf_counter() - start, 2),
            "models_loaded": load_count() - before,
        }
        for number in (1, 2):
            if number == 2:
                await pilot.press("ctrl+n")
            seen.clear()
            loads = load_count()
            app.query_one("#prompt").value = question
            asked = time.perf_counter()
            await pilot.press("enter")
            await until(lambda: bool(seen) and not app.running, "answer")
            result[f"question_{number}"] = {
                "first_token_ms": round((seen[0] - asked) * 1000, 1),
                "models_loaded": load_count() - loads,
            }
    return result


async def mcp_service(
    options: AgentOptions, cache: Store, history: Store, question: str, wait_s: float
) -> dict:
    from htmlrag_chat.assembly.wiring import build_parts
    from htmlrag_chat.mcp.service import ContextService, Loading, shared

    before = load_count()
    start = time.perf_counter()
    parts = shared(build_parts(options, cache, lambda event: None))
    result: dict[str, object] = {
        "load_s": round(time.perf_counter() - start, 2),
        "models_loaded": load_count() - before,
    }
    service = ContextService(Loading.done(parts), cache, history)
    for number in (1, 2):
        seen, emit = first_token_clock()
        loads = load_count()
        asked = time.perf_counter()
        await asyncio.wait_for(service.answer(question, emit), wait_s)
        result[f"question_{number}"] = {
            "first_token_ms": round((seen[0] - asked) * 1000, 1),
            "models_loaded": load_count() - loads,
        }
    return result


FACES = {"chat_app": chat_app, "mcp_server": mcp_service}


def main() -> int:
    parser = argument_parser(__doc__, "warm.json")
    parser.add_argument("--max-tokens", type=int, default=32, help="answer tokens")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--face", choices=FACES, help="measure this face only, in this process")
    parser.add_argument(
        "--wait", type=float, default=120.0, help="seconds to wait for a load or an answer"
    )
    args = parser.parse_args()
    device = pick_device(args.device)
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    if args.face is None:  # each face in a fresh process: its first load is cold
        report: dict[str, object] = {"machine": machine(device), "question": question}
        for face in FACES:
            with tempfile.TemporaryDirectory() as scratch:
                out = Path(scratch) / "face.json"
                command = [sys.executable, __file__, "--face", face, "--out", str(out)]
                command += ["--tokenizer", args.tokenizer, "--device", args.device]
                # A replay's block embeddings go to a side file: a fresh one, not the user's.
                env = os.environ | {"HTMLRAG_CHAT_DERIVED": str(Path(scratch) / "derived.db")}
                command += ["--max-tokens", str(args.max_tokens), "--wait", str(args.wait)]
                subprocess.run(command, check=True, env=env)
                report[face] = json.loads(out.read_text(encoding="utf-8"))
            print(face, json.dumps(report[face]), flush=True)
        write_report(args.out, report)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        with Store.open(folder / "recording.db") as store:
            import_jsonl(store, DEMO / "recording.jsonl.gz")
        model = build_model(folder / "model", args.tokenizer, "tiny")
        options = AgentOptions(
            reader=ReaderSettings(
                reader="local", model=model, max_tokens=args.max_tokens, device=device
            ),
            prune=PruneSettings(gen_model=model, device=device, budget=2048),
            rounds=1,
            replay=True,
        )
        with (
            Store.open(folder / "recording.db", readonly=True) as cache,
            Store.open(folder / "history.db") as history,
        ):
            result = asyncio.run(FACES[args.face](options, cache, history, question, args.wait))
    args.out.write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
