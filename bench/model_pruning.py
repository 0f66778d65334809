"""Benchmark the two model pruning stages on real pages and questions.

For each question of ``../shared/corpus/qa.jsonl`` (its page, cleaned):
- stage 1: embedding scores (bundled all-MiniLM-L6-v2) on 256-word blocks, pruned to the
  paper's coarse budget of 8192 Llama-3 tokens; blocks/s cold, and the time again with the
  block embeddings cached;
- stage 2: generative scores on 128-word blocks of the stage-1 output, with a tiny random
  Llama (hidden 64, 2 layers) over the real Llama-3 tokenizer, once in our two forward
  passes (the prompt, then the token trie under a tree attention mask) and once re-running
  the whole prompt at every branching node (the reference's cost, ``tests/scoring/reruns``).
  Scores must agree; model calls, prefill tokens and wall time are compared.

A random-weight model measures cost, not quality: the token trie, the prompt and the
number of forward calls are what they would be for a real pruner. Writes
bench/results/model_pruning.json; ``--device cuda`` on a GPU machine measures the same there.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import torch

from benchlib import argument_parser, quantiles, real_tokenizer, timed
from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.pathtags import to_numbered_html
from htmlrag_chat.html.prune import prune
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.loader import load_causal_lm
from htmlrag_chat.scoring.embed import EmbeddingScorer, MemoryEmbeddingCache
from htmlrag_chat.scoring.generative import GenerativeScorer
from tests.scoring.reruns import rerun_scores
from tests.tiny_models import make_tiny_lm

COARSE_BUDGET, COARSE_WORDS, FINE_WORDS = 8192, 256, 128


def main() -> int:
    parser = argument_parser(__doc__, "model_pruning.json")
    parser.add_argument("--limit", type=int, default=20, help="questions (0: all)")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    device = pick_device(args.device)

    counter = real_tokenizer(args.tokenizer)
    items = [json.loads(line) for line in (args.corpus / "qa.jsonl").open()]
    items = [item for item in items if item.get("file")][: args.limit or None]

    with tempfile.TemporaryDirectory() as folder:
        model = str(make_tiny_lm(Path(folder), args.tokenizer, max_positions=32768))
        cached = GenerativeScorer(model, device=device)
        lm, _ = load_causal_lm(model, device)
        cache = MemoryEmbeddingCache()
        embed = EmbeddingScorer(device=device, cache=cache)
        # Load both models and warm them up before timing anything.
        warm = build_block_tree(Document.from_pages([(Page("w"), clean_html("<p>w x</p>"))]))
        embed.score("warm up", warm)
        cached.score("warm up", warm)

        rows = []
        for number, item in enumerate(items, 1):
            html = clean_html(decode_html((args.corpus / item["file"]).read_bytes()).utf8)
            document = Document.from_pages([(Page(item["file"]), html)])
            coarse = build_block_tree(document, COARSE_WORDS)
            before = embed.encoded
            scores, cold_ms = timed(embed.score, item["question"], coarse)
            encoded = embed.encoded - before
            _, warm_ms = timed(embed.score, item["question"], coarse)
            stage1 = prune(coarse, scores, COARSE_BUDGET, counter)
            fine = build_block_tree(stage1.document, FINE_WORDS)
            ours, ours_ms = timed(cached.score, item["question"], fine)
            prompt = cached.prompt_ids(item["question"], to_numbered_html(fine.document))
            reference, reference_ms = timed(rerun_scores, lm, prompt, cached.path_ids(fine))
            worst = max(
                (abs(a - b) for a, b in zip(ours, reference.scores, strict=True)), default=0.0
            )
            rows.append(
                {
                    "id": item["id"],
                    "stage1_blocks": len(coarse.blocks),
                    "stage1_encoded": encoded,
                    "stage1_cold_ms": round(cold_ms, 1),
                    "stage1_cached_ms": round(warm_ms, 1),
                    "stage1_tokens_after": stage1.tokens_after,
                    "stage2_blocks": len(fine.blocks),
                    "prompt_tokens": cached.last_stats.prompt_tokens,
                    "trie_nodes": cached.last_stats.trie_nodes,
                    "forward_calls": cached.last_stats.forward_calls,
                    "prefill_tokens": cached.last_stats.prefill_tokens,
                    "naive_forward_calls": reference.forward_calls,
                    "naive_prefill_tokens": reference.prefill_tokens,
                    "ms": round(ours_ms, 1),
                    "naive_ms": round(reference_ms, 1),
                    "max_score_difference": worst,
                }
            )
            print(f"{number}/{len(items)} {json.dumps(rows[-1])}", file=sys.stderr)

    def ratio(key: str, base: str) -> list[float]:
        return [row[base] / row[key] for row in rows if row[key]]

    cold_blocks = sum(row["stage1_encoded"] for row in rows)
    cold_seconds = sum(row["stage1_cold_ms"] for row in rows) / 1000
    report = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, "
        f"Python {platform.python_version()}, torch {torch.__version__}",
        "device": device if device == "cpu" else torch.cuda.get_device_name(0),
        "questions": len(rows),
        "budgets": {
            "coarse": COARSE_BUDGET,
            "coarse_words": COARSE_WORDS,
            "fine_words": FINE_WORDS,
        },
        "stage1_embed": {
            "model": embed.model_name,
            "blocks_per_s_cold": round(cold_blocks / cold_seconds, 1),
            "cold_ms": quantiles([row["stage1_cold_ms"] for row in rows]),
            "cached_ms": quantiles([row["stage1_cached_ms"] for row in rows]),
        },
        "stage2_gen": {
            "model": "random Llama, hidden 64, 2 layers, Llama-3 tokenizer",
            "prompt_tokens": quantiles([row["prompt_tokens"] for row in rows]),
            "forward_calls": quantiles([row["forward_calls"] for row in rows]),
            "naive_forward_calls": quantiles([row["naive_forward_calls"] for row in rows]),
            "prefill_tokens": quantiles([row["prefill_tokens"] for row in rows]),
            "naive_prefill_tokens": quantiles([row["naive_prefill_tokens"] for row in rows]),
            "ms": quantiles([row["ms"] for row in rows]),
            "naive_ms": quantiles([row["naive_ms"] for row in rows]),
            "prefill_reduction_median": round(
                statistics.median(ratio("prefill_tokens", "naive_prefill_tokens")), 1
            ),
            "speedup_median": round(statistics.median(ratio("ms", "naive_ms")), 1),
            "max_score_difference": max(row["max_score_difference"] for row in rows),
        },
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
