"""The first answer token against its floor (issue 48), per reader backend, in one warm
process: a first question, a follow-up, a second question.

The floor of a question is what it cannot do without: the load (once per process), its
search and fetch, its pruning, one prefill of its answer's prompt and one token. Everything
else the agent does (the plan, the sufficiency check, the rewrite of a follow-up) must hide
behind it or be skipped. Every figure comes from the same run: the questions through the
product (``wiring.build_parts``, as ``ask`` builds it, replayed), then, at the end, each
answer's prompt prefilled again from nothing (the reader's kept state dropped) with one
token, timed alone. Per question: each stage's time, every reader call's prompt tokens,
tokens evaluated and tokens generated, and ``ratio``: the first token (from the process's
load for the first question) over its floor.

Backends (``--backends``):

- ``gguf``: a GGUF file in this process (llama.cpp), by default Qwen2.5-Coder-1.5B-Instruct
  from the models folder, on the CPU: the issue's target, first token <= 1.2x the floor for
  the demo question and for its follow-up;
- ``server``: llama-cpp-python's OpenAI-compatible server (``tests/smollm2.py``) on a GGUF
  (``--server-model``, default SmolLM2-135M), what it evaluated read from its own log;
- ``transformers``: a transformers model in this process, random weights over the real
  Llama-3 tokenizer: ``--shape tiny`` on the CPU, or ``--shape 8b`` (the Llama-3.1-8B
  shape, bfloat16) with ``--device cuda``, where the floor's prefill is also timed as one
  plain forward pass of the model (``plain_forward_s``). Random weights never write ENOUGH:
  their check generates to its cap (``calls`` shows it), where a real model writes a word.

The questions: the demo recording's (``demo/``), then "Shorter please, in one sentence."
(a follow-up that needs no search), then ``bench/data/cold10``'s (a new conversation).

``--processes`` (the in-process backends): the demo question as a user asks it, ``ask`` in a
fresh process, its first token from the process's start (its progress read on stderr),
against a fresh process that loads the reader plainly (llama.cpp, or transformers'
``from_pretrained``) and prefills the answer's prompt once; then ``ask`` again while
``htmlrag-chat serve`` runs with the same settings (``ask`` hands it the question), against
this process's prefill of that prompt from nothing, right after. Both floors add the
question's search, fetch and pruning as measured in this process.

    python bench/latency.py                                    # the CPU figures
    python bench/latency.py --backends transformers --shape 8b --device cuda --tokenizer llama3
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchlib import ROOT, argument_parser, build_model, write_report
from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.assembly.wiring import AgentOptions, Parts, build_parts
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader import CallStats, ChatModel, Message, Turn
from htmlrag_chat.reader.layout import answer_messages
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.recording import import_jsonl
from tests.smollm2 import ALIAS, llama_server, smollm2_gguf

DEMO = ROOT / "demo"
COLD10 = ROOT / "bench" / "data" / "cold10"
QWEN = Path("~/.local/share/htmlrag-chat/models/Qwen2.5-Coder-1.5B-Instruct-Q4.gguf")
FOLLOW_UP = "Shorter please, in one sentence."
WEB_STAGES = ("search", "fetch")


def pruning_ms(timings: dict[str, float]) -> float:
    """The pruning stages' time: cleaning, and each scorer's blocks, score and prune."""
    return sum(ms for stage, ms in timings.items() if stage == "clean" or "/" in stage)


@dataclass
class ServerChat(OpenAIChat):
    """The server as a reader, each call's evaluated tokens read from its own log line
    (``prefix-match hit, remaining N``; none: the whole prompt), the prompt and the reply
    counted with the same GGUF in this process."""

    log: Path | None = None
    local: LlamaCppChat | None = None
    seen: int = 0
    counted: list[CallStats] = field(default_factory=list)

    async def stream(self, messages: Sequence[Message], max_tokens: int) -> AsyncIterator[str]:
        assert self.log is not None and self.local is not None
        reply = ""
        try:
            async for chunk in super().stream(messages, max_tokens):
                reply += chunk
                yield chunk
        finally:
            prompt = len(self.local.prompt_ids(messages))
            text = self.log.read_text(errors="replace")
            new, self.seen = text[self.seen :], len(text)
            evaluated = prompt
            for line in new.splitlines():
                if "prefix-match hit" in line:
                    words = line.split()
                    evaluated = int(words[words.index("remaining") + 1])
            made = len(self.local.load().tokenize(reply.encode(), add_bos=False)) if reply else 0
            self.counted.append(CallStats(prompt, evaluated, made))


def calls_of(chat: ChatModel) -> list[CallStats]:
    """The reader's record of its calls."""
    return chat.counted if isinstance(chat, ServerChat) else chat.calls  # type: ignore[attr-defined]


async def one_token_s(chat: ChatModel, messages: list[Message]) -> float:
    """Seconds to prefill ``messages`` from nothing and write one token: the reader's kept
    state dropped (a server's by a short prompt of another kind before it)."""
    chat.forget()  # a reader in this process drops its kept state
    if "base_url" in chat.identity():  # a server keeps its own: another prompt evicts it
        async for _ in chat.stream([Message("user", "Say yes.")], 1):
            pass
    started = time.perf_counter()
    async for _ in chat.stream(messages, 1):
        pass
    return time.perf_counter() - started


def plain_forward_s(chat: Any, messages: list[Message]) -> float:
    """One forward pass of a transformers reader over ``messages`` with no cache (its
    last position's logits only), warm: the model's own speed."""
    import torch

    model, _ = chat.load()
    ids = torch.tensor([chat.prompt_ids(messages)], device=model.device)
    spent = []
    for _ in range(3):
        if model.device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        with torch.inference_mode():
            model(input_ids=ids, logits_to_keep=1)
        if model.device.type == "cuda":
            torch.cuda.synchronize()
        spent.append(time.perf_counter() - started)
    return min(spent[1:])


async def questions(
    parts: Parts, store: Store, load_s: float
) -> tuple[dict[str, Any], dict[str, list[Message]]]:
    """The three questions, then each one's floor; and each one's answer prompt."""
    chat = parts.reader.chat
    assert chat is not None
    demo = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    cold = json.loads(COLD10.with_suffix(".json").read_text(encoding="utf-8"))["question"]
    agent = parts.agent(store, lambda _: None)
    asked: dict[str, tuple[Answer, list[Turn], list[CallStats]]] = {}

    async def ask(name: str, question: str, history: list[Turn]) -> Answer:
        before = len(calls_of(chat))
        answer = await agent.ask(question, history)
        asked[name] = (answer, history, calls_of(chat)[before:])
        print(name, round((answer.first_token_ms or 0) / 1000, 1), "s", flush=True)
        return answer

    first = await ask("first", demo, [])
    turn = Turn(first.question, first.markdown, tuple(first.sources))
    await ask("follow_up", FOLLOW_UP, [turn])
    await ask("second", cold, [])
    report, prompts = {}, {}
    for name, (answer, history, calls) in asked.items():
        messages = prompts[name] = answer_messages(answer.question, answer.sources, history)
        prefill = await one_token_s(chat, messages)
        web = sum(answer.research.timings.get(stage, 0.0) for stage in WEB_STAGES) / 1000
        prune = pruning_ms(answer.research.timings) / 1000
        load = load_s if name == "first" else 0.0
        floor = load + web + prune + prefill
        first_token = load + (answer.first_token_ms or 0.0) / 1000
        report[name] = {
            "question": answer.question,
            "stages_ms": {stage: round(ms, 1) for stage, ms in answer.research.timings.items()},
            "queries": answer.research.queries,
            "sources": len(answer.sources),
            "answer": answer.text,
            "calls": [
                {"prompt": c.prompt_tokens, "evaluated": c.evaluated, "generated": c.generated}
                for c in calls
            ],
            "evaluated": sum(c.evaluated for c in calls),
            "first_token_s": round(first_token, 2),
            "floor": {
                "load_s": round(load, 2),
                "web_s": round(web, 2),
                "pruning_s": round(prune, 2),
                "prefill_one_token_s": round(prefill, 2),
                "answer_prompt_tokens": len(chat.prompt_ids(messages))  # type: ignore[attr-defined]
                if hasattr(chat, "prompt_ids")
                else None,
                "s": round(floor, 2),
            },
            "ratio": round(first_token / floor, 2) if floor else None,
        }
        if not isinstance(chat, (LlamaCppChat, ServerChat)):
            report[name]["floor"]["plain_forward_s"] = round(plain_forward_s(chat, messages), 3)
    return report, prompts


def run_backend(
    name: str,
    options: AgentOptions,
    recording: Path,
    chat: ChatModel | None = None,
    settings: list[str] | None = None,
) -> dict[str, Any]:
    """One backend: the load, then the questions, in this process; with ``settings``
    (``ask``'s options for the same reader), the processes too."""
    with Store.open(recording) as store:
        started = time.perf_counter()
        parts = build_parts(options, store, lambda _: None)
        load_s = time.perf_counter() - started
        if chat is not None:  # the server read through a chat that reads its log
            reader = LLMReader(chat, "openai", options.reader.max_tokens)
            parts = replace(parts, reader=reader)
        result = {"load_s": round(load_s, 2), "plan_first": parts.plan_first}
        report, prompts = asyncio.run(questions(parts, store, load_s))
        result |= report
        if settings is not None:
            assert parts.reader.chat is not None
            result["processes"] = processes(
                parts.reader.chat, prompts["first"], settings, recording, result["first"]
            )
    print(name, json.dumps({k: v.get("ratio") for k, v in result.items() if isinstance(v, dict)}))
    return result


def processes(
    chat: ChatModel, messages: list[Message], settings: list[str], recording: Path, first: dict
) -> dict[str, Any]:
    """The demo question as a user asks it: ``ask`` in a fresh process against a fresh
    process's plain load and prefill of its answer prompt; then ``ask`` through ``serve``
    against this process's prefill of that prompt from nothing, right after it. Both floors
    add the question's search, fetch and pruning as measured in this process."""
    demo = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    command = [sys.executable, "-m", "htmlrag_chat", "--cache", str(recording), "--replay"]
    asking = [*command, "ask", demo, *settings, "--progress"]
    around = first["floor"]["web_s"] + first["floor"]["pruning_s"]
    plain = plain_fresh(chat, messages, recording.parent)
    result: dict[str, Any] = {"fresh_floor": plain | {"s": round(plain["s"] + around, 2)}}
    result["fresh"] = one_ask([*asking, "--no-service"])
    run = recording.parent / "run"
    run.mkdir(mode=0o700, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(run)
    serving = subprocess.Popen(
        [*command, "serve", *settings], text=True,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert serving.stderr is not None
        while "serving on" not in (line := serving.stderr.readline()):
            if not line:
                raise SystemExit("serve ended before it listened")
        result["served"] = one_ask(asking)
    finally:
        serving.send_signal(signal.SIGTERM)  # a background job ignores SIGINT
        serving.wait(60)
    warm = asyncio.run(one_token_s(chat, messages))
    result["warm_floor"] = {"prefill_one_token_s": round(warm, 2), "s": round(warm + around, 2)}
    for name, floor in (("fresh", "fresh_floor"), ("served", "warm_floor")):
        first_token = result[name]["first_token_s"]
        if first_token:
            result[f"{name}_ratio"] = round(first_token / result[floor]["s"], 2)
    return result


def one_ask(command: list[str]) -> dict[str, Any]:
    """One ``ask`` process: its exit, when (seconds from its start) its progress said the
    answer's first token came (the reader generating in ``read``), and whether the service
    answered."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None and process.stdout is not None
    reading, first_token, served = False, None, False
    for line in process.stderr:
        reading = reading or "] read (" in line
        served = served or "answered by the htmlrag-chat service" in line
        if reading and first_token is None and "reader: generating" in line:
            first_token = round(time.perf_counter() - started, 2)
    process.stdout.read()
    return {
        "exit": process.wait(),
        "first_token_s": first_token,
        "total_s": round(time.perf_counter() - started, 2),
        "service": served,
    }


def plain_fresh(chat: ChatModel, messages: list[Message], folder: Path) -> dict[str, float]:
    """A fresh process's plain load of the reader and one prefill of ``messages`` with one
    token (llama.cpp's eval of the GGUF, or transformers' ``from_pretrained`` and one
    forward pass): the floor of a fresh ``ask`` but its search and pruning."""
    ids = folder / "prompt.json"
    ids.write_text(json.dumps(chat.prompt_ids(messages)))  # type: ignore[attr-defined]
    if isinstance(chat, LlamaCppChat):
        load = f"""
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
model = LlamaCppChat({chat.path!r}).load()
loaded = time.perf_counter()
model.eval(ids)
"""
    else:
        device = str(chat.load()[0].device)  # type: ignore[attr-defined]
        load = f"""
import torch
from transformers import AutoModelForCausalLM
dtype = torch.bfloat16 if {device!r}.startswith("cuda") else torch.float32
model = AutoModelForCausalLM.from_pretrained(
    {chat.name!r}, dtype=dtype, device_map={device!r}
)
loaded = time.perf_counter()
with torch.inference_mode():
    model(input_ids=torch.tensor([ids], device={device!r}), logits_to_keep=1)
if torch.cuda.is_available():
    torch.cuda.synchronize()
"""
    script = f"""
import json, time
started = time.perf_counter()
ids = json.load(open({str(ids)!r}))
{load}
done = time.perf_counter()
print(json.dumps({{"load_s": round(loaded - started, 2), "prefill_one_token_s":
                   round(done - loaded, 2), "s": round(done - started, 2)}}))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> int:
    parser = argument_parser(__doc__, "latency.json")
    parser.add_argument("--backends", nargs="+", default=["gguf", "server", "transformers"])
    parser.add_argument("--model", type=Path, default=QWEN, help="the in-process GGUF")
    parser.add_argument("--server-model", type=Path, default=None, help="default SmolLM2")
    parser.add_argument("--server-budget", type=int, default=1024)
    parser.add_argument("--shape", choices=["tiny", "8b"], default="tiny")
    parser.add_argument("--device", default="cpu", help="the transformers reader's")
    parser.add_argument("--max-tokens", type=int, default=64, help="answer tokens at most")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--processes", action="store_true", help="fresh ask, and via serve")
    args = parser.parse_args()
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.1f}",
        "max_tokens": args.max_tokens,
        "rounds": args.rounds,
    }
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        recording = folder / "recording.db"
        with Store.open(recording) as store:
            import_jsonl(store, DEMO / "recording.jsonl.gz")
            import_jsonl(store, COLD10.with_suffix(".jsonl.gz"))
        os.environ["HTMLRAG_CHAT_DERIVED"] = str(folder / "derived.db")

        def options(reader: ReaderSettings, **prune: Any) -> AgentOptions:
            reader = replace(reader, max_tokens=args.max_tokens, judge="off")
            return AgentOptions(
                reader=reader, prune=PruneSettings(**prune), rounds=args.rounds, replay=True
            )

        common = ["--max-tokens", str(args.max_tokens), "--judge", "off"]
        common += ["--rounds", str(args.rounds)]
        if "gguf" in args.backends:
            model = str(args.model.expanduser())
            asked = ["--reader", "local", "--model", model, *common]
            report["gguf"] = run_backend(
                "gguf",
                options(ReaderSettings(reader="local", model=model)),
                recording,
                settings=asked if args.processes else None,
            )
            report["gguf"]["model"] = args.model.name
        if "server" in args.backends:
            model = (args.server_model or smollm2_gguf()).expanduser()
            local = LlamaCppChat(str(model))
            with llama_server(folder, n_ctx=8192, model=model) as server:
                chat = ServerChat(server.base_url, ALIAS, timeout=600, llama_cpp=True)
                chat.log, chat.local = server.log, local
                settings = ReaderSettings(reader="openai", base_url=server.base_url, model=ALIAS)
                report["server"] = run_backend(
                    "server", options(settings, budget=args.server_budget), recording, chat
                )
            report["server"]["model"] = model.name
        if "transformers" in args.backends:
            reader = build_model(folder / "reader", args.tokenizer, args.shape)
            settings = ReaderSettings(reader="local", model=reader, device=args.device)
            asked = ["--reader", "local", "--model", reader, "--device", args.device, *common]
            report["transformers"] = run_backend(
                "transformers",
                options(settings),
                recording,
                settings=asked if args.processes else None,
            )
            report["transformers"] |= {"shape": args.shape, "device": args.device}
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
