"""Benchmark a hostile PDF in ``--docs``: 2,000 pages that all draw one content stream.

Issue 47's item 3: such a file is small (under 1 MB here, 330 KB in the campaign) but holds
2,000 times its stream's text, and every page's text was extracted before the size cap was
checked: ``ask --docs`` stayed busy about 15 minutes with memory growing. Now extraction
stops where the page cap (5 MiB) is reached, and the cut is said in a note.

The PDF is written by hand (``tests/documents/test_pdf.py``: 700 lines of ~430 characters a
page, about 0.3 MB of text each). Each measurement is a process of its own on a fresh cache,
its wall time, CPU time and peak memory (``wait4``; the CPU time is the figure to compare
on a machine shared with other work):

- ``ask``: ``htmlrag-chat ask Q --docs DIR --no-web --reader extractive -v``, with this
  checkout, and, given ``--before CHECKOUT`` (main at 3afc709, say), with that one, stopped
  after ``--before-limit`` seconds;
- ``mcp``: the MCP server over stdio (``--docs DIR --no-web mcp``), one ``web_context``
  call from the official SDK's client, this checkout only: the server reads documents
  through the same code.

Writes bench/results/pdf_cap.json. No network.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, argument_parser, write_report
from tests.documents.test_pdf import LINE, shared_stream_pdf

PAGES, LINES = 2000, 700
QUESTION = "Who planted the quince tree?"
STAGE = re.compile(r"documents done in (\d+) ms: (.*)$", re.M)
CUT = re.compile(r"note: document cut: .*$", re.M)


def run_process(
    command: list[str], env: dict[str, str], checkout: Path, limit: float
) -> dict[str, Any]:
    """One process: its wall time, peak memory, exit code and output; killed past ``limit``."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        # in the checkout: ``-m`` puts the working folder first on the path
        child = subprocess.Popen(command, stdout=out, stderr=err, env=env, cwd=checkout)
        killed = False
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > limit:
                child.kill()
                killed = True
                pid, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.2)
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
        stage = STAGE.search(stderr)
        cut = CUT.search(stderr)
        return {
            "seconds": round(time.monotonic() - start, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),  # a shared machine
            "killed_after_limit": killed,
            "exit": None if killed else child.returncode,
            "peak_rss_mb": round(usage.ru_maxrss / 1024),
            "documents_stage_ms": int(stage.group(1)) if stage else None,
            "documents_counts": stage.group(2) if stage else None,
            "cut_note": cut.group(0) if cut else None,
        }


def ask(checkout: Path, folder: Path, cache: Path, limit: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HTMLRAG_CHAT_PROBE_PORTS": ""}
    env["HF_HUB_OFFLINE"] = "1"
    command = [sys.executable, "-m", "htmlrag_chat", "--cache", str(cache), "ask", QUESTION]
    command += ["--docs", str(folder), "--no-web", "--reader", "extractive", "-v"]
    return {"checkout": str(checkout), **run_process(command, env, checkout, limit)}


def mcp_call(folder: Path, work: Path) -> dict[str, Any]:
    """One ``web_context`` call to a stdio MCP server of this checkout, timed."""
    from tests.mcp.servers import stdio_session, structured

    options = ["--cache", str(work / "mcp.sqlite3"), "--docs", str(folder), "--no-web"]
    options += ["--reader", "extractive", "--pruner", "bm25"]

    async def call() -> dict[str, Any]:
        async with stdio_session(options, work) as session:
            start = time.monotonic()
            context = structured(await session.call_tool("web_context", {"query": QUESTION}))
            seconds = time.monotonic() - start
        cut = [note for note in context.get("notices", []) if note.startswith("document cut")]
        return {
            "web_context_seconds": round(seconds, 1),
            "sources": len(context["sources"]),
            "cut_note": cut[0] if cut else None,
        }

    return asyncio.run(call())


def main() -> None:
    parser = argument_parser(__doc__, "pdf_cap.json")
    parser.add_argument("--before", type=Path, help="a checkout of the code before the fix")
    parser.add_argument("--before-limit", type=float, default=1200.0, metavar="SECONDS")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pdf-cap-") as temporary:
        work = Path(temporary)
        folder = work / "docs"
        folder.mkdir()
        pdf = shared_stream_pdf(PAGES, [f"{n} {LINE * 5}" for n in range(LINES)])
        (folder / "book.pdf").write_bytes(pdf)
        report: dict[str, Any] = {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), "
            f"Python {platform.python_version()}",
            "pdf": {"bytes": len(pdf), "pages": PAGES, "lines_a_page": LINES},
            "command": "nice -n 10 python bench/pdf_cap.py --before CHECKOUT",
            "after": ask(ROOT, folder, work / "after.sqlite3", 600.0),
            "mcp": mcp_call(folder, work),
        }
        if args.before is not None:
            before = ask(args.before, folder, work / "before.sqlite3", args.before_limit)
            report["before"] = before
    print(json.dumps(report, indent=2))
    write_report(args.out, report)


if __name__ == "__main__":
    main()
