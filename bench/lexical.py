"""What language-aware lexical terms cost in the first stage, per 10-page question.

For every question of the given ``eval qa`` reports (their items name the ten pages each
question was evaluated on), on the fused stage's block tree at 1024 tokens (blocks of 128
words): the milliseconds of BM25 on plain terms (the scorer before issue 25) and on analysed
terms (``lexical.analysis``: language per block, Snowball stems, compound halves, CJK
bigrams), both as the fused stage runs them (context lines, then the blocks' own words),
and of the whole fused scoring of a cold question (an empty embedding cache). One process,
pages read and cleaned before timing starts.

Writes bench/results/lexical.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchlib import argument_parser, quantiles, timed
from htmlrag_chat.html.blocks import build_block_tree
from htmlrag_chat.html.split import split_long_text
from htmlrag_chat.lexical import bm25_scores
from htmlrag_chat.lexical.analysis import lexical_scores
from htmlrag_chat.pruning.pipeline import PageInput, load_pages
from htmlrag_chat.pruning.recipe import block_words
from htmlrag_chat.scoring.embed import EmbeddingScorer, MemoryEmbeddingCache
from htmlrag_chat.scoring.fused import FusedScorer, contextual_texts

BUDGET = 1024


def main() -> None:
    parser = argument_parser(__doc__, "lexical.json")
    parser.add_argument("reports", nargs="+", type=Path, help="eval qa JSON reports")
    args = parser.parse_args()
    EmbeddingScorer(device="cpu").load()  # the model loads once, before any timing
    plain, analysed, fused, blocks = [], [], [], []
    for report in args.reports:
        data = json.loads(report.read_text(encoding="utf-8"))
        pool = Path(data["settings"]["pool"])
        questions = _questions(Path(data["settings"]["dataset"]))
        for item in data["items"]:
            files = [pool / name for name in item["pages"]]
            pages = [PageInput(str(path), path.read_bytes()) for path in files]
            words = block_words(BUDGET)
            tree = build_block_tree(split_long_text(load_pages(pages).document, words), words)
            query = questions[item["id"]]
            texts = contextual_texts(tree)
            own = [block.text for block in tree.blocks]
            where = [block.page for block in tree.blocks]
            plain.append(sum(timed(bm25_scores, query, each)[1] for each in (texts, own)))
            analysed.append(
                sum(timed(lexical_scores, query, each, where)[1] for each in (texts, own))
            )
            scorer = FusedScorer(EmbeddingScorer(cache=MemoryEmbeddingCache(), device="cpu"))
            fused.append(timed(scorer.score, query, tree)[1])
            blocks.append(len(tree.blocks))
    result = {
        "questions": len(plain),
        "budget": BUDGET,
        "blocks": quantiles([float(count) for count in blocks]),
        "bm25_plain_ms": quantiles(plain),
        "bm25_analysed_ms": quantiles(analysed),
        "fused_cold_ms": quantiles(fused),
        "reports": [str(report) for report in args.reports],
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


def _questions(dataset: Path) -> dict[str, str]:
    lines = dataset.read_text(encoding="utf-8").splitlines()
    return {
        record["id"]: record["question"]
        for record in (json.loads(line) for line in lines if line.strip())
    }


if __name__ == "__main__":
    main()
