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

``cold_10_pages`` is the check of issue 12: a question of ``qa.jsonl`` with its ten pages
(the gold page and nine hard distractors, as ``eval qa`` picks them) recorded into a cache,
then replayed cold (no embedding kept anywhere) with the extractive reader and the default
recipe: in this process with the models loaded (question to first answer token), and as a
whole ``htmlrag-chat ask`` process (start to first progress line, start to exit).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, argument_parser, build_model, machine, quantiles, write_report
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.base.events import AnswerDelta, Event
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.pruning.factory import PruneSettings, build_recipe, plan_alone
from htmlrag_chat.pruning.tokens import token_counter
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.local import LocalChat
from htmlrag_chat.reader.registry import backend_of
from htmlrag_chat.settings.tree import BUDGET
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings
from htmlrag_chat.store.recording import import_jsonl

DEMO = ROOT / "demo"


def ignore(event: Event) -> None:
    """Progress is not timed here: the answers' own timings are."""


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
        "stages_ms": {stage: round(ms, 1) for stage, ms in answer.research.timings.items()},
    }


def measure(
    reader, prune: PruneSettings, cache: Path, question: str, runs: int, tokenizer: str
) -> dict:
    with Store.open(cache) as store:
        embeddings = ThreadLocalEmbeddings(cache)
        stages = build_recipe(plan_alone(prune), ignore, embeddings).stages(prune.budget)
        # The local reader counts in its own tokens; the others in the same Llama-3 ones.
        spec = None if reader.chat else tokenizer
        counter = backend_of(reader).counter(reader, spec, lambda: token_counter(spec, ignore))
        agent = Agent([WebSource(WebRecorder(store, replay=True))], reader, stages, counter)
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


def record_qa_item(corpus: Path, folder: Path) -> tuple[Path, str]:
    """A cache holding the first ``qa.jsonl`` question's search and its ten pages."""
    from htmlrag_chat.eval.datasets import load_dataset
    from htmlrag_chat.eval.distractors import load_pool
    from htmlrag_chat.eval.items import Distractors, ready_qa
    from htmlrag_chat.eval.stored import EvalCache
    from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

    (item,) = load_dataset("qa", corpus / "qa.jsonl", 1)
    with Store.open(folder / "eval.db") as scratch:
        cache = EvalCache(scratch)
        ready = ready_qa(item, Distractors(load_pool(corpus, cache, lambda event: None)), cache)
    path = folder / "qa-recording.db"
    urls = [f"https://corpus.example/{Path(page.source).name}" for page in ready.pages]
    with Store.open(path) as store:
        store.put_search(item.question, [SearchResult(url, url) for url in urls])
        for url, page in zip(urls, ready.pages, strict=True):
            store.put_page(FetchResult(url, Outcome.OK, body=page.data, status=200))
    return path, item.question


def cold_question(recording: Path, question: str, tokenizer: str, folder: Path) -> dict:
    """The cold 10-page replay, in process (models loaded) and as an ``ask`` process."""
    from htmlrag_chat.scoring.embed import MemoryEmbeddingCache

    prune = PruneSettings(device="cpu", budget=BUDGET)
    recipe = build_recipe(plan_alone(prune), ignore, MemoryEmbeddingCache())
    recipe.first.embedder.load()  # the fused stage's model: loaded, not timed
    counter = token_counter(tokenizer, ignore)
    with Store.open(recording, readonly=True) as store:
        agent = Agent(
            [WebSource(WebRecorder(store, replay=True))],
            ExtractiveReader(),
            recipe.stages(prune.budget),
            counter,
        )
        in_process = asyncio.run(one_run(agent, question))
    env = {**os.environ, "HTMLRAG_CHAT_DERIVED": str(folder / "derived.db")}
    command = [
        sys.executable, "-m", "htmlrag_chat", "--cache", str(recording), "ask", "--replay",
        "--reader", "extractive", "--progress", "--tokenizer", tokenizer, question,
    ]  # fmt: skip
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    process.stderr.readline()
    first_line = time.perf_counter() - start
    _, err = process.communicate()
    total = time.perf_counter() - start
    if process.returncode:
        raise SystemExit(f"ask failed: {err}")
    return {
        "sources": in_process["sources"],
        "in_process": in_process,
        "process_first_progress_s": round(first_line, 2),
        "process_total_s": round(total, 2),
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
            f"local-{args.shape}": LLMReader(
                LocalChat(model, device), "transformers", args.max_tokens
            ),
            "extractive": ExtractiveReader(),
        }
        for name, reader in readers.items():
            cache = folder / f"{name}.db"
            shutil.copy(folder / "recording.db", cache)
            prune = PruneSettings(gen_model=model, device=device, budget=BUDGET)
            report[name] = measure(reader, prune, cache, question, args.runs, args.tokenizer)
            print(name, json.dumps(report[name]["cold"]), flush=True)
        recording, qa_question = record_qa_item(args.corpus, folder)
        report["cold_10_pages"] = cold_question(recording, qa_question, args.tokenizer, folder)
        print("cold_10_pages", json.dumps(report["cold_10_pages"]), flush=True)
    write_report(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
