"""Real readers' answers for the claims benchmark (``bench/claims.py``), written once.

Each dev question of the project's QA sets (``../shared/corpus/qa.jsonl``,
``bench/data/qa_lang.jsonl``) gets the context ``ask`` would give it: its gold page among
the 9 pool pages BM25 ranks highest for it (as ``eval qa``), pruned by the default recipe
to ``--budget`` tokens and numbered as the agent numbers sources. The reader (a GGUF file,
greedy, through the product's prompt and the citation filter every answer passes) answers
it. One line per question and model goes to ``--out``; the contexts (shared by the models)
to ``--contexts``. An interrupted run resumes: questions already in ``--out`` are skipped.

    nice -n 10 .venv/bin/python bench/claims_answers.py --gguf SmolLM2.gguf --out a.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from benchlib import ROOT
from htmlrag_chat.agent.answer import numbered_sources
from htmlrag_chat.agent.reading import read_answer
from htmlrag_chat.base.events import ignore
from htmlrag_chat.eval.datasets import QAItem, load_dataset
from htmlrag_chat.eval.distractors import load_pool
from htmlrag_chat.eval.items import Distractors, ready_qa
from htmlrag_chat.eval.stored import EvalCache
from htmlrag_chat.pruning.factory import PruneSettings, build_recipe
from htmlrag_chat.pruning.pipeline import load_pages, prune_document
from htmlrag_chat.pruning.tokens import load_token_counter
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.scoring.embed import MemoryEmbeddingCache

SHARED = ROOT.parent / "shared"
SETS = (
    ("qa", SHARED / "corpus" / "qa.jsonl"),
    ("qa_lang", ROOT / "bench" / "data" / "qa_lang.jsonl"),
)


def contexts(budget: int, path: Path) -> list[dict[str, object]]:
    """Every dev question with its numbered sources, computed once and kept in ``path``."""
    if path.exists():
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    counter = load_token_counter(str(SHARED / "tokenizers" / "llama3")).counter
    recipe = build_recipe(PruneSettings(), ignore, MemoryEmbeddingCache())
    pool = load_pool(SHARED / "corpus" / "pages", EvalCache())
    out = []
    for name, dataset in SETS:
        for item in load_dataset("qa", dataset, pages=SHARED / "corpus"):
            assert isinstance(item, QAItem)
            ready = ready_qa(item, Distractors(pool), EvalCache())
            document = load_pages(ready.pages).document
            results = prune_document(document, item.question, recipe.stages(budget), counter)
            sources = numbered_sources(results[-1].result.document, {})
            gold = {str(path) for path in item.files}
            out.append(
                {
                    "id": item.id,
                    "set": name,
                    "lang": item.lang,
                    "question": item.question,
                    "answers": list(item.answers),
                    "sources": [
                        {
                            "number": s.number,
                            "url": s.url,
                            "title": s.title,
                            "html": s.html,
                            "text": s.text,
                            "gold": s.url in gold,
                        }
                        for s in sources
                    ],
                }
            )
            print(f"context {item.id}: {len(sources)} sources", flush=True)
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in out), "utf-8")
    return out


async def answer_all(args: argparse.Namespace) -> None:
    from htmlrag_chat.base.sources import Source

    done = set()
    if args.out.exists():
        done = {json.loads(line)["id"] for line in args.out.read_text("utf-8").splitlines()}
    reader = LLMReader(LlamaCppChat(str(args.gguf), context=4096), "local", args.max_tokens)
    taken: dict[str, int] = {}
    for context in contexts(args.budget, args.contexts):
        taken[context["set"]] = taken.get(context["set"], 0) + 1
        if context["id"] in done or taken[context["set"]] > args.per_set:
            continue
        sources = [
            Source(s["number"], s["url"], s["title"], s["html"], s["text"])
            for s in context["sources"]
        ]
        start = time.perf_counter()
        text, markdown, _, removed = await read_answer(
            reader, context["question"], sources, (), ignore, start
        )
        record = {
            "id": context["id"],
            "model": args.gguf.name,
            "answer": text,
            "markdown": markdown,
            "removed": removed,
            "seconds": round(time.perf_counter() - start, 2),
        }
        with args.out.open("a", encoding="utf-8") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"{context['id']} {record['seconds']} s: {text[:100]!r}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--contexts", type=Path, default=Path("/tmp/claims_contexts.jsonl"))
    parser.add_argument("--budget", type=int, default=1024)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--per-set", type=int, default=1000, help="the first N of each set")
    asyncio.run(answer_all(parser.parse_args()))


if __name__ == "__main__":
    main()
