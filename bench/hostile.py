"""Benchmark hostile and huge pages: time and peak memory at the page cap.

Every case is one page of exactly ``MAX_PAGE_BYTES`` (the largest any input path accepts),
some of them attacks the byte-level guards defuse, each run in a fresh process: decoding and
cleaning (``clean_page``), then BM25 pruning to 4,096 tokens counted with the real Llama-3
tokenizer, as ``ask`` does. Memory is the process's RSS before the page (Python, lxml,
transformers and the tokenizer loaded) and its peak while the page is worked on (Linux: the
peak is reset after loading). Cases:

- real: body text of shared-corpus pages, concatenated to the cap;
- text: one paragraph of words (a plain-text dump);
- dense: ``<p>x</p>`` repeated, the most elements per byte;
- attributes: one element with as many attributes as fit (100,000 took 12 s before);
- attribute-spread: elements of 65 attributes each, one over the cap, repeated;
- nest: ``<ul><li>`` nested to the cap (text after the nest used to be dropped);
- references: ``&#x1b;`` and text repeated (each one used to crash cleaning).

Writes bench/results/hostile.json.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

from benchlib import ROOT, argument_parser, write_report
from htmlrag_chat.html.limits import MAX_PAGE_BYTES

BUDGET = 4096
CASES = ["real", "text", "dense", "attributes", "attribute-spread", "nest", "references"]


def fill(unit: bytes, head: bytes = b"<html><body>", tail: bytes = b"</body></html>") -> bytes:
    """``head``, ``unit`` repeated (the last one cut), ``tail``: exactly MAX_PAGE_BYTES."""
    room = MAX_PAGE_BYTES - len(head) - len(tail)
    return head + (unit * (room // len(unit) + 1))[:room] + tail


def padded(data: bytes, tail: bytes = b"</body></html>") -> bytes:
    """``data`` and ``tail`` with spaces between them: exactly MAX_PAGE_BYTES."""
    return data + b" " * (MAX_PAGE_BYTES - len(data) - len(tail)) + tail


def real_page(corpus: Path) -> bytes:
    """The bodies of shared-corpus pages, one after another, up to the cap."""
    bodies, size = [], 0
    for path in sorted((corpus / "pages").glob("*.html")):
        body = re.search(rb"<body[^>]*>(.*)</body>", path.read_bytes(), re.S | re.I)
        if body is None:
            continue
        if size + len(body.group(1)) > MAX_PAGE_BYTES - 100:
            break
        bodies.append(body.group(1))
        size += len(body.group(1))
    return padded(b"<html><body>" + b"".join(bodies))


def page(case: str, corpus: Path) -> bytes:
    if case == "real":
        return real_page(corpus)
    if case == "text":
        return fill(b"lorem ipsum dolor sit amet ", b"<html><body><p>", b"</p></body></html>")
    if case == "dense":
        return fill(b"<p>x</p>")
    if case == "attributes":
        count = (MAX_PAGE_BYTES - 100) // len(b" a1234567")
        flood = b" ".join(b"a%d" % i for i in range(count))
        return padded(b"<html><body><p " + flood + b">flooded</p><p>after the flood</p>")
    if case == "attribute-spread":
        return fill(b"<p " + b" ".join(b"a%d" % i for i in range(65)) + b">x</p>")
    if case == "nest":
        depth = (MAX_PAGE_BYTES - 100) // len(b"<ul><li></li></ul>")
        nest = b"<ul><li>" * depth + b"deep" + b"</li></ul>" * depth
        return padded(b"<html><body>" + nest + b"<p>after the nest</p>")
    if case == "references":
        return fill(b"<p>a &#x1b; b &#1; c &#xFFFE; d &#8 e</p>")
    raise ValueError(case)


def run_case(case: str, corpus: Path, tokenizer: str) -> dict[str, object]:
    """One case in this process: its figures, peak RSS included."""
    from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
    from htmlrag_chat.pruning.tokens import load_token_counter
    from htmlrag_chat.scoring.bm25 import BM25Scorer

    counter = load_token_counter(tokenizer).counter
    counter.count("warm up")
    data = page(case, corpus)
    assert len(data) == MAX_PAGE_BYTES, (case, len(data))
    baseline = _reset_peak()
    start = time.perf_counter()
    loaded = load_pages([PageInput(case, data)])
    cleaned = time.perf_counter()
    after_clean = _peak()
    stage = Stage(BM25Scorer(), BUDGET)
    (result,) = prune_document(loaded.document, "what is after the flood", [stage], counter)
    pruned = time.perf_counter()
    return {
        "case": case,
        "bytes": len(data),
        "failed": [str(failure) for failure in loaded.failures.values()],
        "clean_ms": round((cleaned - start) * 1000),
        "prune_ms": round((pruned - cleaned) * 1000),
        "blocks": result.result.blocks,
        "tokens_before": result.result.tokens_before,
        "tokens_after": result.result.tokens_after,
        "rss_before_mb": baseline,
        "rss_peak_clean_mb": after_clean,
        "rss_peak_mb": _peak(),
    }


def _reset_peak() -> int:
    """Reset the process's peak RSS (Linux: clear_refs 5), so that the peak measured next
    is the work's and not the imports'; returns the RSS now, in MiB."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status("VmRSS")


def _peak() -> int:
    return _status("VmHWM")


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return round(int(line.split()[1]) / 1024)
    raise RuntimeError(f"no {field} in /proc/self/status")


def main() -> None:
    parser = argument_parser(__doc__, "hostile.json")
    parser.add_argument("--case", choices=CASES, help="run one case here (the children do)")
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.corpus, args.tokenizer)))
        return
    results = []
    for case in CASES:
        child = subprocess.run(
            [sys.executable, __file__, "--case", case, "--corpus", str(args.corpus),
             "--tokenizer", args.tokenizer],
            capture_output=True, text=True, check=True, cwd=ROOT,
        )  # fmt: skip
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
        print(results[-1])
    write_report(
        args.out,
        {
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}",
            "page_cap_bytes": MAX_PAGE_BYTES,
            "budget": BUDGET,
            "tokenizer": Path(args.tokenizer).name,
            "cases": results,
        },
    )


if __name__ == "__main__":
    main()
