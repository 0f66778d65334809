"""What the query plan buys on compound questions (issue 48): right answers with and without
it, against its seconds, a GGUF reader in this process (Qwen2.5-Coder-1.5B on the CPU).

``bench/data/compound.jsonl``: held-out questions that each name two things to compare or to
tell apart, written for this benchmark from pairs of the shared corpus's questions (the
dev set's and the English held-out set's), with each half's gold answers and page. Nothing
was tuned on them.

There is no network here, so the searches are simulated, the way ``demo/make_recording.py``
made the demo's: a query is answered with the six corpus pages (of the 400 in
``../shared/corpus``, those under 250 KB and every gold page) that Okapi BM25 over their
title and visible text ranks highest, titles from ``<title>``, snippets the start of the
text. This search is easier on a compound question than a web search engine: each corpus
page is about one subject, none about both, so the two gold pages rank first and second
for the question as typed (``gold_ranks`` in the results). ``--plan`` asks the reader for
each question's plan (the product's rewrite prompt, greedy) and writes the sub-queries
into the questions file; every run then builds the recording of the question's and its
sub-queries' searches with their pages, and replays it.

Each question is asked twice through the product (``wiring.build_parts``, the default
pruning and budget for a CPU reader, the check and its second round, no judge):
``typed``: no plan, the question as typed (a CPU reader's default); ``plan``: the plan
waited for, its sub-queries joining the first round (as a plan that comes in time does).
Right: the answer names a gold answer of each half.

    python bench/compound.py --plan     # once: the plans, into bench/data/compound.jsonl
    python bench/compound.py            # -> bench/results/compound.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchlib import ROOT, write_report

sys.path.insert(0, str(ROOT / "demo"))  # the demo recording's own reading of the corpus
from make_recording import CorpusPage, load_pages, load_questions

from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.agent.planning import first_queries, rewrite
from htmlrag_chat.assembly.wiring import AgentOptions, build_parts
from htmlrag_chat.base.events import Event, StageFinished
from htmlrag_chat.lexical import bm25_scores
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.sources.online import WebSource
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

QUESTIONS = ROOT / "bench" / "data" / "compound.jsonl"
QWEN = Path("~/.local/share/htmlrag-chat/models/Qwen2.5-Coder-1.5B-Instruct-Q4.gguf")
RESULTS = 6  # a simulated search's results, as the demo recording's
MAX_PAGE_BYTES = 250_000  # other than gold pages, as the demo recording's
MAX_QUERIES = 3  # the product's default


def search(query: str, pages: dict[str, CorpusPage], gold: set[str]) -> list[str]:
    """The files of the corpus pages BM25 ranks highest for ``query``."""
    files = [f for f, p in pages.items() if f in gold or len(p.data) < MAX_PAGE_BYTES]
    scores = bm25_scores(query, [f"{pages[f].title} {pages[f].text}" for f in files])
    ranked = sorted(range(len(files)), key=lambda i: (-scores[i], files[i]))
    return [files[i] for i in ranked[:RESULTS]]


def gold_ranks(question: dict[str, Any], pages: dict[str, CorpusPage]) -> list[int]:
    """Where the simulated search puts each half's gold page for the question as typed."""
    files = list(pages)
    scores = bm25_scores(question["question"], [f"{p.title} {p.text}" for p in pages.values()])
    ranked = [files[i] for i in sorted(range(len(files)), key=lambda i: (-scores[i], files[i]))]
    return [ranked.index(file) + 1 for file in question["files"]]


def record(questions: list[dict[str, Any]], pages: dict[str, CorpusPage], path: Path) -> None:
    """The searches of every question and sub-query, with their pages, into a cache file."""
    with Store.open(path) as store:
        for question in questions:
            gold = set(question["files"])
            for query in [question["question"], *question["sub_queries"]]:
                found = search(query, pages, gold)
                results = [
                    SearchResult(pages[f].url, pages[f].title, pages[f].text[:160]) for f in found
                ]
                store.put_search(query, results)
                for file in found:
                    page = pages[file]
                    store.put_page(
                        FetchResult(page.url, Outcome.OK, body=page.data, bytes=len(page.data))
                    )


def plans(questions: list[dict[str, Any]], model: Path) -> None:
    """Each question's sub-queries as the reader writes them, into the questions file."""
    chat = LlamaCppChat(str(model.expanduser()))
    for question in questions:
        started = time.perf_counter()
        plan = asyncio.run(rewrite(chat, question["question"], (), MAX_QUERIES, lambda _: None))
        question["sub_queries"] = first_queries(question["question"], plan, MAX_QUERIES)[1:]
        question["plan_s"] = round(time.perf_counter() - started, 1)
        print(question["id"], question["sub_queries"], question["plan_s"], flush=True)
    lines = [json.dumps(q, ensure_ascii=False) for q in questions]
    QUESTIONS.write_text("\n".join(lines) + "\n", encoding="utf-8")


@dataclass
class WaitingWeb(WebRecorder):
    """The replayed web, its first downloads held until the plan has replied: the plan
    waited for, so that its sub-queries always join the first round."""

    planned: asyncio.Event | None = None

    async def fetch_many(self, *args: Any, **kwargs: Any) -> list[FetchResult]:
        if self.planned is not None:
            await self.planned.wait()
        return await super().fetch_many(*args, **kwargs)


def right(answer: str, question: dict[str, Any]) -> bool:
    """Whether ``answer`` names a gold answer of each half (case and digit grouping aside)."""
    text = answer.casefold()
    plain = text.replace(",", "")
    return all(
        any(gold.casefold() in text or gold.casefold().replace(",", "") in plain for gold in half)
        for half in question["answers"]
    )


def ask(agent: Agent, question: dict[str, Any], with_plan: bool) -> dict[str, Any]:
    planned = asyncio.Event()
    events: list[Event] = []

    def emit(event: Event) -> None:
        events.append(event)
        if isinstance(event, StageFinished) and event.stage == "plan":
            planned.set()

    async def main() -> Any:
        [web] = agent.sources
        assert isinstance(web, WebSource)
        recorder = web.recorder
        waiting = WaitingWeb(recorder.store, recorder.searcher, recorder.fetcher, replay=True)
        waiting.planned = planned if with_plan else None
        sources = [WebSource(waiting)]
        return await replace(agent, sources=sources, emit=emit, plan_first=with_plan).ask(
            question["question"]
        )

    answer = asyncio.run(main())
    gold_urls = set(question["urls"])
    return {
        "right": right(answer.text, question),
        "gold_pages_in_sources": len(gold_urls & {s.url for s in answer.sources}),
        "queries": answer.research.queries,
        "rounds": answer.research.rounds,
        "plan_s": round(answer.research.timings.get("plan", 0.0) / 1000, 1),
        "check_s": round(answer.research.timings.get("check", 0.0) / 1000, 1),
        "first_token_s": round((answer.first_token_ms or 0.0) / 1000, 1),
        "total_s": round(answer.total_ms / 1000, 1),
        "answer": answer.text,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--model", type=Path, default=QWEN, help="a GGUF reader")
    parser.add_argument("--plan", action="store_true", help="write the plans, then stop")
    parser.add_argument("--only", nargs="*", help="question ids")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "compound.json")
    args = parser.parse_args()
    lines = QUESTIONS.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    if args.plan:
        plans(questions, args.model)
        return 0
    questions = [q for q in questions if not args.only or q["id"] in args.only]
    pages = load_pages(args.corpus, load_questions(args.corpus))
    by_file = {file: page.url for file, page in pages.items()}
    report: dict[str, Any] = {
        "machine": f"{os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.1f}",
        "model": args.model.name,
        "search": f"simulated: BM25 over {len(pages)} corpus pages, {RESULTS} results",
        "questions": {},
    }
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "compound.db"
        record(questions, pages, recording)
        with Store.open(recording) as store:
            reader = ReaderSettings(reader="local", model=str(args.model), judge="off")
            parts = build_parts(AgentOptions(reader=reader, replay=True), store, lambda _: None)
            agent = parts.agent(store, lambda _: None)
            for question in questions:
                question["urls"] = [by_file[file] for file in question["files"]]
                result = {"gold_ranks": gold_ranks(question, pages)}
                for condition in ("typed", "plan"):
                    result[condition] = ask(agent, question, condition == "plan")
                    print(question["id"], condition, json.dumps(result[condition]), flush=True)
                report["questions"][question["id"]] = result
    runs = report["questions"].values()
    report["summary"] = {
        condition: {
            "right": sum(run[condition]["right"] for run in runs),
            "of": len(runs),
            "plan_s": round(sum(run[condition]["plan_s"] for run in runs), 1),
            "first_token_s": round(sum(run[condition]["first_token_s"] for run in runs), 1),
        }
        for condition in ("typed", "plan")
    }
    report["load_average_at_end"] = round(os.getloadavg()[0], 1)
    write_report(args.out, report)
    print(json.dumps(report["summary"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
