"""Benchmark the HTML core against the authors' toolkit (PyPI htmlrag 0.1.1) on one corpus.

For every page of ``../shared/corpus/retention.jsonl``, in one run and one process:
- per-page milliseconds for clean, block tree (256 words) and prune (BM25, 4096 tokens);
- cleaned tokens / raw tokens with the real Llama-3 tokenizer;
- share of ``with`` snippets (main content) still present after cleaning, over those present
  in the raw page's visible text;
- after pruning to 2048 tokens with the page title as query: ``with`` retention and
  ``without`` leakage (boilerplate kept).

Writes bench/results/html_core.json. Run with ``make bench`` (which builds bench/.venv with
htmlrag 0.1.1; the project itself never depends on it).
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from benchlib import argument_parser, quantiles, real_tokenizer, timed
from htmlrag_chat.html.blocks import Document, Page, build_block_tree, page_title
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.prune import prune
from htmlrag_chat.html.text import normalize_space, visible_text
from htmlrag_chat.scoring.bm25 import BM25Scorer

PRUNE_BUDGET = 4096
RETENTION_BUDGET = 2048
MAX_WORDS = 256


@dataclass
class Tally:
    """Per-implementation measurements over the corpus."""

    ms: dict[str, list[float]] = field(
        default_factory=lambda: {"clean": [], "blocks": [], "prune": []}
    )
    raw_tokens: int = 0
    clean_tokens: int = 0
    with_found: int = 0
    with_after_clean: int = 0
    with_after_prune: int = 0
    without_found: int = 0
    without_after_prune: int = 0
    over_budget: int = 0
    failures: int = 0

    def summary(self) -> dict[str, object]:
        return {
            "ms": {stage: quantiles(values) for stage, values in self.ms.items()},
            "clean_token_ratio": round(self.clean_tokens / self.raw_tokens, 4),
            "with_retention_after_clean": round(self.with_after_clean / self.with_found, 4),
            f"with_retention_after_prune_{RETENTION_BUDGET}": round(
                self.with_after_prune / self.with_found, 4
            ),
            f"without_leakage_after_prune_{RETENTION_BUDGET}": round(
                self.without_after_prune / max(self.without_found, 1), 4
            ),
            f"outputs_over_{PRUNE_BUDGET}_tokens": self.over_budget,
            "failures": self.failures,
        }


def _text(html: str) -> str:
    return normalize_space(visible_text(parse(html))).lower()


def run_ours(utf8: bytes, fallback: str, counter, tally: Tally) -> tuple[str, str, str]:
    """Time our stages on one page; returns the query (the page title, else ``fallback``),
    the cleaned HTML and the HTML pruned to the retention budget."""
    html, ms = timed(clean_html, utf8)
    tally.ms["clean"].append(ms)
    query = page_title(html) or fallback
    document = Document.from_pages([(Page("page", query), html)])
    cleaned = document.to_html()
    tree, ms = timed(build_block_tree, document, MAX_WORDS)
    tally.ms["blocks"].append(ms)
    start = time.perf_counter()
    scores = BM25Scorer().score(query, tree)
    result = prune(tree, scores, PRUNE_BUDGET, counter)
    tally.ms["prune"].append((time.perf_counter() - start) * 1000)
    tally.over_budget += result.tokens_after > PRUNE_BUDGET
    small = prune(tree, scores, RETENTION_BUDGET, counter)
    return query, cleaned, small.document.to_html()


def run_reference(text: str, query: str, tokenizer, tally: Tally) -> tuple[str, str]:
    import htmlrag

    cleaned, ms = timed(htmlrag.clean_html, text)
    tally.ms["clean"].append(ms)
    (tree, simplified), ms = timed(htmlrag.build_block_tree, cleaned, MAX_WORDS)
    tally.ms["blocks"].append(ms)
    pruner = htmlrag.BM25HTMLPruner()
    start = time.perf_counter()
    rankings = pruner.calculate_block_rankings(query, simplified, tree)
    pruned = pruner.prune_HTML(simplified, tree, rankings, tokenizer, PRUNE_BUDGET)
    tally.ms["prune"].append((time.perf_counter() - start) * 1000)
    tally.over_budget += len(tokenizer.encode(pruned, add_special_tokens=False)) > PRUNE_BUDGET
    small = pruner.prune_HTML(simplified, tree, rankings, tokenizer, RETENTION_BUDGET)
    return cleaned, small


def scaling(corpus: Path, item: dict, counter) -> dict[str, float]:
    """Clean + blocks + prune time for 1, 2, 4, 8 copies of one page under one root: cost
    should grow about linearly (the reference re-tokenizes the document per deletion)."""
    data = (corpus / item["file"]).read_bytes()
    timings = {}
    for copies in (1, 2, 4, 8):
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            pages = [(Page(str(i)), clean_html(data)) for i in range(copies)]
            tree = build_block_tree(Document.from_pages(pages), MAX_WORDS)
            prune(tree, BM25Scorer().score("page", tree), PRUNE_BUDGET, counter)
            runs.append((time.perf_counter() - start) * 1000)
        timings[f"x{copies}_ms"] = round(min(runs), 1)
    return timings


def score_texts(tally: Tally, raw: str, cleaned: str, pruned: str, item: dict, count) -> None:
    tally.raw_tokens += count(raw)
    tally.clean_tokens += count(cleaned)
    raw_text, clean_text, pruned_text = _text(raw), _text(cleaned), _text(pruned)
    for snippet in (normalize_space(s).lower() for s in item["with"]):
        if snippet in raw_text:
            tally.with_found += 1
            tally.with_after_clean += snippet in clean_text
            tally.with_after_prune += snippet in pruned_text
    for snippet in (normalize_space(s).lower() for s in item["without"]):
        if snippet in raw_text:
            tally.without_found += 1
            tally.without_after_prune += snippet in pruned_text


def main() -> int:
    parser = argument_parser(__doc__, "html_core.json")
    parser.add_argument("--limit", type=int, default=0, help="first N pages only")
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")

    counter = real_tokenizer(args.tokenizer)
    items = [json.loads(line) for line in (args.corpus / "retention.jsonl").open()]
    if args.limit:
        items = items[: args.limit]

    # Warm both up on the first page (imports, regex compilation, lazy tables), untimed.
    first = decode_html((args.corpus / items[0]["file"]).read_bytes())
    run_ours(first.utf8, "warm up", counter, Tally())
    if not args.no_reference:
        run_reference(first.text, "warm up", counter.tokenizer, Tally())

    ours, reference = Tally(), Tally()
    started = time.perf_counter()
    for number, item in enumerate(items, 1):
        decoded = decode_html((args.corpus / item["file"]).read_bytes())
        raw = decoded.text
        query, cleaned, pruned = run_ours(decoded.utf8, item["url"], counter, ours)
        score_texts(ours, raw, cleaned, pruned, item, counter.count)
        if not args.no_reference:
            try:
                cleaned, pruned = run_reference(raw, query, counter.tokenizer, reference)
            except Exception as error:  # the reference crashes on some pages; count them
                reference.failures += 1
                print(f"reference failed on {item['file']}: {error!r}"[:200], file=sys.stderr)
            else:
                score_texts(reference, raw, cleaned, pruned, item, counter.count)
        if number % 25 == 0:
            elapsed = time.perf_counter() - started
            print(f"[{elapsed:6.0f}s] {number}/{len(items)} pages", file=sys.stderr)

    report: dict[str, object] = {
        "machine": f"{platform.machine()}, {_cpus()} CPUs, Python {platform.python_version()}",
        "pages": len(items),
        "tokenizer": "Llama-3 (../shared/tokenizers/llama3)",
        "budgets": {"prune_ms": PRUNE_BUDGET, "retention": RETENTION_BUDGET},
        "max_words": MAX_WORDS,
        "ours": ours.summary(),
    }
    largest = max(items, key=lambda item: (args.corpus / item["file"]).stat().st_size)
    report["scaling_largest_page"] = {
        "file": largest["file"],
        **scaling(args.corpus, largest, counter),
    }
    if not args.no_reference:
        report["reference_htmlrag_0_1_1"] = reference.summary()
        report["speedup_median"] = {
            stage: round(
                statistics.median(reference.ms[stage]) / statistics.median(ours.ms[stage]), 1
            )
            for stage in ours.ms
        }
        report["speedup_p95"] = {
            stage: round(
                quantiles(reference.ms[stage])["p95"] / quantiles(ours.ms[stage])["p95"], 1
            )
            for stage in ours.ms
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


if __name__ == "__main__":
    raise SystemExit(main())
