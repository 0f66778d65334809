"""Benchmark ``ask --docs`` over a folder of 500 files: the first ask, which reads every file,
then asks that read only what changed.

The folder holds the shared corpus's 400 pages as ``.html`` files and 100 of them again as
Markdown (their cleaned page written as Markdown by ``html_to_markdown``), 500 files in all.
Each ask is the real command in a process of its own (``htmlrag-chat --cache C ask Q --docs
DIR --no-web --reader extractive -v --json``) on one cache file:

1. first: a fresh cache, every file read, converted and cleaned;
2. second: the same question again: no file changed, none is read;
3. changed: 5 files touched (same content) and 5 rewritten, then another question: only the
   10 are read, and only the 5 rewritten converted again.

Each reports the process's wall time, the ``documents`` stage's time and counts (from the
``-v`` trace) and whether the question's own page is among the sources. Writes
bench/results/docs.json. No network: ``--no-web``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, argument_parser, write_report
from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.html.markdown import html_to_markdown
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

MARKDOWN_COPIES = 100
CHANGED = 5
STAGE = re.compile(r"documents done in (\d+) ms: (.*)$", re.M)


def make_folder(corpus: Path, folder: Path) -> dict[str, str]:
    """The 500 files; returns each corpus file's name in the folder, by its path in qa."""
    pages = sorted((corpus / "pages").glob("*.html"))
    for page in pages:
        shutil.copy(page, folder / page.name)
    for page in pages[:MARKDOWN_COPIES]:
        _, cleaned = clean_page(PageInput(page.name, page.read_bytes()))
        markdown = html_to_markdown(serialize(cleaned))
        (folder / f"{page.stem}.md").write_text(markdown, encoding="utf-8")
    return {f"pages/{page.name}": page.name for page in pages}


def ask(cache: Path, folder: Path, question: str, tokenizer: str) -> dict[str, object]:
    command = [sys.executable, "-m", "htmlrag_chat", "--cache", str(cache), "ask", question]
    command += ["--docs", str(folder), "--no-web", "--reader", "extractive", "-v", "--json"]
    command += ["--tokenizer", tokenizer]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    stage = STAGE.findall(done.stderr)
    assert len(stage) == 1, done.stderr[-2000:]
    ms, counts = stage[0]
    record = json.loads(done.stdout)
    return {
        "seconds": round(seconds, 2),
        "documents_ms": int(ms),
        "counts": {key: int(value) for key, value in re.findall(r"(\w+) (\d+)", counts)},
        "sources": [Path(source["url"]).name for source in record["sources"]],
        "prune_ms": round(sum(ms for s, ms in record["timings_ms"].items() if "/" in s), 1),
    }


def main() -> None:
    parser = argument_parser(__doc__, "docs.json")
    args = parser.parse_args()
    questions = [json.loads(line) for line in (args.corpus / "qa.jsonl").open(encoding="utf-8")]
    with tempfile.TemporaryDirectory(prefix="bench-docs-") as scratch:
        folder, cache = Path(scratch) / "docs", Path(scratch) / "cache.sqlite3"
        folder.mkdir()
        names = make_folder(args.corpus, folder)
        asked = [q for q in questions if q.get("file") in names][:2]
        runs = {}
        for name, item in (("first", asked[0]), ("second", asked[0])):
            runs[name] = ask(cache, folder, item["question"], args.tokenizer)
            runs[name]["gold_in_sources"] = names[item["file"]] in runs[name]["sources"]
        files = sorted(folder.glob("*.html"))
        for path in files[:CHANGED]:  # touched: the same bytes, a new time
            os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        for path in files[CHANGED : 2 * CHANGED]:  # rewritten: a paragraph more
            path.write_bytes(path.read_bytes() + b"<p>A paragraph added later.</p>")
        runs["changed"] = ask(cache, folder, asked[1]["question"], args.tokenizer)
        runs["changed"]["gold_in_sources"] = names[asked[1]["file"]] in runs["changed"]["sources"]
        cache_bytes = sum(p.stat().st_size for p in Path(scratch).glob("cache.sqlite3*"))
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python "
        f"{platform.python_version()}, no GPU",
        "files": len(names) + MARKDOWN_COPIES,
        "html_files": len(names),
        "markdown_files": MARKDOWN_COPIES,
        "changed": {"touched": CHANGED, "rewritten": CHANGED},
        "cache_bytes": cache_bytes,
        "runs": runs,
        "command": "nice -n 10 .venv/bin/python bench/docs.py",
    }
    write_report(args.out, report)
    for name, run in runs.items():
        print(f"{name}: {run['seconds']} s, documents {run['documents_ms']} ms, {run['counts']}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
