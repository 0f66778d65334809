"""Round 2 of a recorded two-round question: its time with the pages round 1 cleaned kept,
and with every page cleaned again each round (as before issue 51).

The recording: two English dev questions of ``../shared/corpus/qa.jsonl``, each searched
with its gold page and nine other corpus pages as results (10 pages a round, the default),
all pages recorded, replayed. The reader is a scripted OpenAI-compatible server over
loopback whose check says the second question is missing, so round 2 searches it and
prunes round 1's pages with its own. The pruning is ``ask``'s CPU default at the CPU
budget (the fused stage: BM25 and the embedding model, its embeddings in the cache file).
"Before" runs the same code with the kept pages forgotten at each round
(``agent.rounds.load_pages`` given no ``kept``), which cleans every page every round as the
loop did before. Round 2 is timed from its ``Searching`` event to its ``SourcesReady``;
each way runs ``--runs`` times on its own copy of the recording, the two ways alternating
(the first run of each warms the embedding cache of its copy); medians.

Writes bench/results/rounds.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, write_report
from htmlrag_chat.agent import rounds as rounds_module
from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.base.events import Event, Searching, SourcesReady, StageFinished
from htmlrag_chat.pruning.factory import PruneSettings, build_recipe, plan_alone
from htmlrag_chat.pruning.pipeline import load_pages
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.settings.tree import CPU_BUDGET
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.store.embeddings import embeddings_for
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.openai_server import ScriptedLLM, serve_llm

CORPUS = ROOT.parent / "shared" / "corpus"
PAGES_A_ROUND = 10


def recording(path: Path) -> tuple[str, str]:
    """Two questions and their results, recorded into ``path``; the questions."""
    items = [json.loads(line) for line in (CORPUS / "qa.jsonl").open(encoding="utf-8")]
    english = [item for item in items if item.get("lang") == "en" and item["id"].startswith("dev")]
    first, second = english[0], english[1]
    others = [item for item in items if item not in (first, second)]
    random.Random(0).shuffle(others)
    with Store.open(path) as store:
        for number, question in enumerate((first, second)):
            pool = others[number * (PAGES_A_ROUND - 1) : (number + 1) * (PAGES_A_ROUND - 1)]
            results = [question, *pool]
            store.put_search(
                question["question"], [SearchResult(r["url"], r["url"]) for r in results]
            )
            for item in results:
                body = (CORPUS / item["file"]).read_bytes()
                store.put_page(FetchResult(item["url"], Outcome.OK, status=200, body=body))
    return first["question"], second["question"]


def run_once(path: Path, first: str, second: str, forget: bool) -> dict[str, Any]:
    """One question of two rounds on a copy of the recording; round 2's times, and the
    sources it gave the reader (URL and words of each)."""
    events: list[Event] = []
    clock: dict[str, float] = {}

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, Searching) and event.round == 2:
            clock["start"] = time.perf_counter()
        elif isinstance(event, SourcesReady) and "start" in clock and "end" not in clock:
            clock["end"] = time.perf_counter()

    def reply(messages: list[dict[str, Any]]) -> str:
        checking = "Do the sources above contain" in messages[-1]["content"]
        return f"MISSING: {second}" if checking else "An answer [1]."

    async def main() -> Answer:
        async with serve_llm(ScriptedLLM(reply=reply)) as url:
            with Store.open(path) as store:
                prune = PruneSettings(pruner="fused", budget=CPU_BUDGET)
                recipe = build_recipe(plan_alone(prune), emit, embeddings_for(store))
                agent = Agent(
                    [WebSource(WebRecorder(store, replay=True))],
                    LLMReader(OpenAIChat(url, "scripted"), "openai", max_tokens=16),
                    recipe.stages(CPU_BUDGET),
                    ApproxTokenCounter(),
                    emit=emit,
                    rounds=2,
                )
                return await agent.ask(first)

    original = rounds_module.load_pages
    if forget:  # before: nothing kept between rounds, every page cleaned again
        rounds_module.load_pages = lambda pages, emit, kept=None: load_pages(pages, emit)  # type: ignore[assignment]
    try:
        answer = asyncio.run(main())
    finally:
        rounds_module.load_pages = original
    cleans = [e for e in events if isinstance(e, StageFinished) and e.stage == "clean"]
    assert len(cleans) == 2, "the question ran two rounds"
    prunes = [e for e in events if isinstance(e, StageFinished) and "/" in e.stage]
    half = len(prunes) // 2
    return {
        "round2_ms": (clock["end"] - clock["start"]) * 1000,
        "round2_clean_ms": cleans[1].ms,
        "round2_pages_cleaned": cleans[1].counts["pages"] - cleans[1].counts.get("kept", 0),
        "round2_prune_ms": sum(e.ms for e in prunes[half:]),
        "sources": [[source.url, len(source.text.split())] for source in answer.sources],
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians of the times; the sources of the last run."""
    times = [key for key in runs[0] if key != "sources"]
    return {key: round(statistics.median(run[key] for run in runs), 1) for key in times} | {
        "sources": runs[-1]["sources"]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        recorded = Path(folder) / "recording.sqlite3"
        first, second = recording(recorded)
        copies = {name: Path(folder) / f"{name}.sqlite3" for name in ("before", "after")}
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in copies}
        for _ in range(args.runs + 1):  # the two ways alternate, so load changes hit both
            for name, copy in copies.items():
                if not copy.exists():
                    shutil.copy(recorded, copy)
                runs[name].append(run_once(copy, first, second, forget=name == "before"))
        # The first run of each warms the embedding cache of its copy.
        results = {name: summary(measured[1:]) for name, measured in runs.items()}
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} when it started",
        "questions": [first, second],
        "pages_a_round": PAGES_A_ROUND,
        "runs": args.runs,
        **results,
    }
    print(json.dumps(report, indent=2))
    write_report(ROOT / "bench" / "results" / "rounds.json", report)


if __name__ == "__main__":
    main()
