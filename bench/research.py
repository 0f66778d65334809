"""research against ask on multi-part questions over local documents (issue 52).

Each question of ``bench/data/research_multi.jsonl`` has 2-4 gold facts, each on its own
corpus page. Its folder holds those pages and four distractors (two gold pages of other
questions, two other pages), copied from ``../shared/corpus`` under their own names, and
both commands read it alone, as the issue's check does (``--docs DIR --no-web``), each in a
fresh process of the real command line, timed:

    htmlrag-chat research QUESTION --docs DIR --no-web --reader local --model M --budget B
    htmlrag-chat ask QUESTION --docs DIR --no-web --reader local --model M --budget B*P

``research`` prunes each part to ``B`` tokens, so ``ask`` gets the same total budget: ``B``
times the parts the research asked (P, known once it has run; research runs first). Each
method has its own cache file, so neither reuses the other's embeddings.

Per report: the gold facts it states (any of a fact's answers in its text, case and spacing
aside), the gold facts stated in a sentence that cites (as shown: a corrected citation
counts as corrected) a file that holds the fact, the sentences backed by their sources out
of those that say something, and the minutes the process took. Rows are kept one a line in
``WORK/rows.jsonl`` (``~/.cache/htmlrag-chat/research-bench``) as they come, so a run
stopped (or killed) resumes where it was; the summary goes to ``bench/results/research.json``.

    nice -n 10 .venv/bin/python bench/research.py [--limit N] [--only rm-01,rm-02]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

from benchlib import ROOT, write_report

DATA = ROOT / "bench" / "data" / "research_multi.jsonl"
MODEL = Path.home() / ".local/share/htmlrag-chat/models/Qwen2.5-Coder-1.5B-Instruct-Q4.gguf"
METHODS = ("research", "ask")
TIMEOUT = 3600  # seconds one report may take on a loaded CPU
WORK = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "htmlrag-chat/research-bench"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--model", type=Path, default=MODEL)
    parser.add_argument("--budget", type=int, default=1024, help="each part's (ask: x parts)")
    parser.add_argument("--work", type=Path, default=WORK, help="folders, caches and rows")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "research.json")
    parser.add_argument("--only", default="", help="question ids, comma-separated")
    parser.add_argument("--limit", type=int, default=0, help="the first N questions only")
    parser.add_argument("--summary", action="store_true", help="only summarise the rows kept")
    parser.add_argument("--methods", default=",".join(METHODS), help="those run (default both)")
    args = parser.parse_args()
    questions = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    if args.only:
        questions = [q for q in questions if q["id"] in args.only.split(",")]
    if args.limit:
        questions = questions[: args.limit]
    args.work.mkdir(parents=True, exist_ok=True)
    rows_file = args.work / "rows.jsonl"
    rows = _rows(rows_file)
    load = os.getloadavg()[0]
    for question in questions if not args.summary else []:
        for method in args.methods.split(","):
            if (question["id"], method) in rows:
                continue
            parts = rows.get((question["id"], "research"), {}).get("parts")
            row = run(question, method, args, parts or len(question["facts"]))
            rows[(question["id"], method)] = row
            with rows_file.open("a", encoding="utf-8") as file:
                file.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(_line(row), flush=True)
    ids = [q["id"] for q in questions]
    kept = [rows[key] for key in sorted(rows) if key[0] in ids]
    write_report(args.out, summary(kept, questions, args, load))


def run(question: dict[str, Any], method: str, args: argparse.Namespace, parts: int) -> dict:
    """One report of ``question`` by ``method``, scored."""
    folder = _folder(question, args)
    budget = args.budget if method == "research" else args.budget * parts
    command = [
        sys.executable, "-m", "htmlrag_chat", "--cache", str(args.work / f"cache-{method}.db"),
        method, question["question"], "--docs", str(folder), "--no-web", "--reader", "local",
        "--model", str(args.model), "--budget", str(budget), "--json",
    ]  # fmt: skip
    env = os.environ | {
        "PYTHONPATH": str(ROOT),
        "HTMLRAG_CHAT_DERIVED": str(args.work / f"derived-{method}.db"),
        "HTMLRAG_CHAT_LLAMA_EXTRA_BUFFERS": os.environ.get("HTMLRAG_CHAT_LLAMA_EXTRA_BUFFERS", "0"),
    }
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=TIMEOUT)
    minutes = (time.perf_counter() - start) / 60
    row: dict[str, Any] = {"id": question["id"], "method": method, "budget": budget,
                           "minutes": round(minutes, 2), "load": os.getloadavg()[0]}  # fmt: skip
    if done.returncode != 0:
        return row | {"error": done.stderr.strip().splitlines()[-1:]}
    record = json.loads(done.stdout)
    return row | score(question, record, method)


def score(question: dict[str, Any], record: dict[str, Any], method: str) -> dict[str, Any]:
    """Facts stated and cited to a file that holds them, and sentences backed."""
    if method == "research":
        text = record["report"]
        urls = {r["number"]: r["url"] for r in record["references"]}
        sentences = [s for part in record["parts"] for s in part["sentences"]]
        extra = {"parts": len(record["parts"]), "split": [p["part"] for p in record["parts"]]}
    else:
        text = record["answer"]
        urls = {s["number"]: s["url"] for s in record["sources"]}
        sentences = record["sentences"]
        extra = {}
    checked = [s for s in sentences if s["checked"]]
    facts = []
    for fact in question["facts"]:
        aliases = [_plain(answer) for answer in fact["answers"]]
        stated = any(alias in _plain(text) for alias in aliases)
        gold = Path(fact["file"]).name
        cited = any(
            any(alias in _plain(s["sentence"]) for alias in aliases)
            and any(Path(urls.get(n, "")).name == gold for n in s["corrected"] or s["cited"])
            for s in sentences
        )
        facts.append({"qa": fact["qa"], "stated": stated, "cited": stated and cited})
    return extra | {
        "facts": facts,
        "sentences": len(checked),
        "backed": sum(not s["unsupported"] for s in checked),
        "text": text,
    }


def summary(
    rows: list[dict[str, Any]], questions: list[dict[str, Any]], args: argparse.Namespace,
    load: float,
) -> dict[str, Any]:  # fmt: skip
    """The table of docs/evaluation.md: per method, over the questions every method run
    answered (both, or the one ``--methods`` ran)."""
    ran = [m for m in METHODS if any(r["method"] == m for r in rows)]
    done = {q["id"] for q in questions if all((q["id"], m) in _keyed(rows) for m in ran)}
    table = {}
    for method in ran:
        mine = [r for r in rows if r["method"] == method and r["id"] in done and "facts" in r]
        facts = [f for r in mine for f in r["facts"]]
        stated = sum(f["stated"] for f in facts)
        cited = sum(f["cited"] for f in facts)
        table[method] = {
            "reports": len(mine),
            "failed": sum(1 for r in rows if r["method"] == method and "error" in r),
            "gold_facts": len(facts),
            "stated": stated,
            "stated_and_cited_to_a_gold_file": cited,
            "cited_share_of_stated": round(cited / stated, 3) if stated else None,
            "all_facts_stated_and_cited": sum(all(f["cited"] for f in r["facts"]) for r in mine),
            "sentences": sum(r["sentences"] for r in mine),
            "backed": sum(r["backed"] for r in mine),
            "minutes_per_report": _spread([r["minutes"] for r in mine]),
        }
    research, ask = table.get("research", {}), table.get("ask", {})
    ratio = research["stated"] / ask["stated"] if research and ask.get("stated") else None
    return {
        "data": str(args.data.resolve().relative_to(ROOT)),
        "model": args.model.name,
        "budget_per_part": args.budget,
        "machine": f"{os.cpu_count()} CPUs, load average {load:.1f} when the run began",
        "date": time.strftime("%Y-%m-%d"),
        "questions": len(questions),
        "questions_done_by_both": len(done),
        "methods": table,
        "research_over_ask_stated": round(ratio, 2) if ratio else None,
        "rows": [{k: v for k, v in row.items() if k != "text"} for row in rows],
    }


def _folder(question: dict[str, Any], args: argparse.Namespace) -> Path:
    folder = args.work / "docs" / question["id"]
    if not folder.is_dir():
        folder.mkdir(parents=True)
        for page in [f["file"] for f in question["facts"]] + question["distractors"]:
            shutil.copy(args.corpus / page, folder / Path(page).name)
    return folder


def _rows(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return _keyed(rows)


def _keyed(rows: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["id"], row["method"]): row for row in rows}


def _plain(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ")).strip()


def _spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    median, mean = statistics.median(values), statistics.fmean(values)
    return {"median": round(median, 2), "mean": round(mean, 2), "max": round(max(values), 2)}


def _line(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['id']} {row['method']}: failed: {row['error']}"
    stated = sum(f["stated"] for f in row["facts"])
    cited = sum(f["cited"] for f in row["facts"])
    return (
        f"{row['id']} {row['method']}: {stated}/{len(row['facts'])} stated, {cited} cited to "
        f"a gold file, {row['backed']}/{row['sentences']} backed, {row['minutes']:.1f} min"
    )


if __name__ == "__main__":
    main()
