"""Question to answer on a replayed recording: time to the first and the last answer token,
and the time of every stage.

The bundled recording (demo/, six real pages) is replayed through the whole pipeline:
embedding stage (bundled all-MiniLM-L6-v2), generative stage and local reader. The two
language models are the same random-weight Llama, so the figures measure the machinery
(prompt sizes, prefill, streaming), not answer quality:
- ``tiny``: hidden size 64, two layers, over the real Llama-3 tokenizer and chat format;
- ``8b``: the Llama-3.1-8B shape (only with CUDA: 16 GB of bfloat16 weights), to measure the
  reader's real prefill and decode throughput.
Run 1 is cold (block embeddings computed); runs 2+ find them in the cache file. The
extractive reader (no LLM) is timed on the same pipeline for comparison.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, argument_parser, build_model, machine, quantiles, write_report
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.device import pick_device
from htmlrag_chat.events import AnswerDelta, Event
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.local import LocalChat
from htmlrag_chat.sources import Sources
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings
from htmlrag_chat.store.recording import import_jsonl
from htmlrag_chat.wiring import PruneSettings, build_stages, reader_counter

DEMO = ROOT / "demo"


async def one_run(agent: Agent, question: str) -> dict[str, object]:
    tokens: list[float] = []
    start = time.perf_counter()

    def emit(event: Event) -> None:
        if isinstance(event, AnswerDelta):
            tokens.append((time.perf_counter() - start) * 1000)

    agent.emit = emit
    answer = await agent.ask(question)
    return {
        "first_token_ms": round(answer.first_token_ms or 0.0, 1),
        "last_token_ms": round(tokens[-1] if tokens else 0.0, 1),
        "total_ms": round(answer.total_ms, 1),
        "answer_chars": len(answer.text),
        "sources": len(answer.sources),
        "stages_ms": {stage: round(ms, 1) for stage, ms in answer.timings.items()},
    }


def measure(
    reader, prune: PruneSettings, cache: Path, question: str, runs: int, tokenizer: str
) -> dict:
    with Store.open(cache) as store:
        embeddings = ThreadLocalEmbeddings(cache)
        stages = build_stages(prune, lambda event: None, embeddings)
        # The local reader counts in its own tokens; the others in the same Llama-3 ones.
        counter = reader_counter(reader, None if reader.chat else tokenizer).counter
        agent = Agent(Sources(store, replay=True), reader, stages, counter)
        results = [asyncio.run(one_run(agent, question)) for _ in range(runs)]
    warm = results[1:] or results
    return {
        "stages": [stage.scorer.name for stage in stages],
        "cold": results[0],
        "warm_first_token_ms": quantiles([r["first_token_ms"] for r in warm]),
        "warm_last_token_ms": quantiles([r["last_token_ms"] for r in warm]),
        "warm_stages_ms": {
            stage: quantiles([r["stages_ms"][stage] for r in warm])["median"]
            for stage in warm[0]["stages_ms"]
        },
    }


def main() -> int:
    parser = argument_parser(__doc__, "ask.json")
    parser.add_argument("--runs", type=int, default=4, help="runs per reader (first one cold)")
    parser.add_argument("--max-tokens", type=int, default=128, help="answer tokens")
    parser.add_argument("--shape", choices=["tiny", "8b"], default="tiny")
    args = parser.parse_args()
    device = pick_device()
    if args.shape == "8b" and device != "cuda":
        raise SystemExit("error: the 8B shape needs a CUDA GPU")
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    report: dict[str, object] = {
        "machine": machine(device),
        "question": question,
        "runs": args.runs,
        "max_tokens": args.max_tokens,
    }
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        with Store.open(folder / "recording.db") as store:
            import_jsonl(store, DEMO / "recording.jsonl.gz")
        model = build_model(folder / "model", args.tokenizer, args.shape)
        readers = {
            f"local-{args.shape}": LLMReader(LocalChat(model, device), "local", args.max_tokens),
            "extractive": ExtractiveReader(),
        }
        for name, reader in readers.items():
            cache = folder / f"{name}.db"
            shutil.copy(folder / "recording.db", cache)
            prune = PruneSettings(gen_model=model, device=device)
            report[name] = measure(reader, prune, cache, question, args.runs, args.tokenizer)
            print(name, json.dumps(report[name]["cold"]), flush=True)
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
