"""Stress the race between listing a ``--docs`` folder and reading its files.

Issue 47's item 5: the rule "links out of the folder are not followed" was checked when the
folder was listed, and each file opened later with a plain ``open()``, so a file swapped for
a link in between (600 notes give seconds) was followed: the outside file was quoted in the
answer and kept in the cache. Now every file is opened with ``O_NOFOLLOW`` and checked
through its descriptor (``documents/opening.py``).

The folder holds 600 notes and ``zz-victim.md``, which sorts last, so it is read last: the
window between the listing and its reading is the whole documents stage. While each ``ask``
runs (``htmlrag-chat ask Q --docs DIR --no-web --reader extractive --json -v``, a process of
its own on a fresh cache, so that every note is read), a thread swaps the victim for a link
to a private file outside the folder and back, every ``--period`` seconds (by renames, so
the file keeps its inode). After each ask the answer, its sources and the cache file (with
its write-ahead log) are searched for the private file's words.

Reported per run: the documents stage's time (the window), the swaps made while the ask
ran, what the victim was at the listing and at the reading (from the notes), and whether
the private words leaked. ``--before CHECKOUT`` runs the same against an older checkout
(main at 3afc709, say), where the race is won some of the time. Writes
bench/results/docs_race.json. No network.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import ROOT, argument_parser, write_report

NOTES = 600
SECRET = "Vault combination 4711-0815 for the Skarvik strongroom, written by Ragnhild Aas"
QUESTION = "What is the vault combination for the Skarvik strongroom?"
STAGE = re.compile(r"documents done in (\d+) ms: (.*)$", re.M)


def make_folder(work: Path) -> tuple[Path, Path]:
    """600 notes and the victim in ``docs``; the private file outside it."""
    folder, private = work / "docs", work / "private"
    folder.mkdir(parents=True), private.mkdir(parents=True)
    for number in range(NOTES):
        (folder / f"note-{number:03d}.md").write_text(
            f"# Note {number}\n\nThe boat shed key number {number} hangs on hook {number % 7}.\n",
            encoding="utf-8",
        )
    (folder / "zz-victim.md").write_text("# Victim\n\nA plain note, read last.\n")
    (private / "secret.md").write_text(f"# Private\n\n{SECRET}.\n")
    return folder, private / "secret.md"


class Swapper(threading.Thread):
    """Swaps the victim for a link to the private file and back, every ``period`` s."""

    def __init__(self, folder: Path, secret: Path, period: float) -> None:
        super().__init__(daemon=True)
        self.victim = folder / "zz-victim.md"
        self.stash = folder / ".stash"  # hidden: never listed
        self.stash.mkdir(exist_ok=True)
        (self.stash / "link.md").unlink(missing_ok=True)
        (self.stash / "link.md").symlink_to(secret)
        self.period = period
        self.swaps = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        real, link = self.stash / "real.md", self.stash / "link.md"
        while not self.stopping.is_set():
            os.rename(self.victim, real)
            os.rename(link, self.victim)  # a link to the private file now
            self.swaps += 1
            time.sleep(self.period)
            os.rename(self.victim, link)
            os.rename(real, self.victim)  # the note again, the same inode
            time.sleep(self.period)

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def leaked(text: str | bytes) -> bool:
    words = ("4711-0815", "Ragnhild")  # the private file's, not the question's
    return any((word.encode() if isinstance(text, bytes) else word) in text for word in words)


def one_ask(checkout: Path, folder: Path, secret: Path, cache: Path, period: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "HTMLRAG_CHAT_PROBE_PORTS": ""}
    env["HF_HUB_OFFLINE"] = "1"
    command = [sys.executable, "-m", "htmlrag_chat", "--cache", str(cache), "ask", QUESTION]
    command += ["--docs", str(folder), "--no-web", "--reader", "extractive", "--json", "-v"]
    swapper = Swapper(folder, secret, period)
    start = time.monotonic()
    swapper.start()
    try:
        # in the checkout: ``-m`` puts the working folder first on the path
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=checkout)
    finally:
        swapper.stop()
    seconds = time.monotonic() - start
    stage = STAGE.search(done.stderr)
    victim = [line for line in done.stderr.splitlines() if "zz-victim.md" in line]
    stored = b"".join(
        path.read_bytes() for path in (cache, cache.with_name(cache.name + "-wal")) if path.exists()
    )
    return {
        "exit": done.returncode,
        "seconds": round(seconds, 1),
        "window_ms": int(stage.group(1)) if stage else None,  # listing to the last file read
        "documents_counts": stage.group(2) if stage else None,
        "swaps_during_ask": swapper.swaps,
        "victim_notes": victim,
        "leaked_in_answer": leaked(done.stdout),
        "leaked_in_cache": leaked(stored),
    }


def runs(checkout: Path, count: int, period: float, work: Path, label: str) -> dict[str, Any]:
    folder, secret = make_folder(work / label)
    results = [
        one_ask(checkout, folder, secret, work / label / f"cache-{n}.sqlite3", period)
        for n in range(count)
    ]
    return {
        "checkout": str(checkout),
        "asks": count,
        "leaks": sum(r["leaked_in_answer"] or r["leaked_in_cache"] for r in results),
        "windows_ms": [r["window_ms"] for r in results],
        "swaps": sum(r["swaps_during_ask"] for r in results),
        "runs": results,
    }


def main() -> None:
    parser = argument_parser(__doc__, "docs_race.json")
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--period", type=float, default=0.002, metavar="SECONDS")
    parser.add_argument("--before", type=Path, help="a checkout of the code before the fix")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="docs-race-") as temporary:
        work = Path(temporary)
        report: dict[str, Any] = {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), "
            f"Python {platform.python_version()}",
            "notes": NOTES,
            "swap_period_s": args.period,
            "command": f"nice -n 10 python bench/docs_race.py --asks {args.asks}",
            "after": runs(ROOT, args.asks, args.period, work, "after"),
        }
        if args.before is not None:
            report["before"] = runs(args.before, args.asks, args.period, work, "before")
    print(json.dumps({k: v for k, v in report.items()}, indent=2)[:3000])
    write_report(args.out, report)


if __name__ == "__main__":
    main()
