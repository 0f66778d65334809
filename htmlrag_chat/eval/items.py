"""An item made ready to evaluate: its query, its pages in order, what counts as kept.

Retention asks with the page's title, as a user searching for the page would; a snippet
that is not in the page's visible text at all is left out of the counts (and reported as
missing), since no method could keep it. A QA question gets its distractors here. What
an item needs is stored in the cache with its results, so a resumed item only reads and
hashes its pages.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag_chat.eval.datasets import QAItem, RetentionItem
from htmlrag_chat.eval.distractors import PoolPage, mix, pick_distractors
from htmlrag_chat.eval.metrics import answer_present, kept, normalize
from htmlrag_chat.eval.pages import read_page
from htmlrag_chat.eval.stored import RESULTS, EvalCache, digest, key_of
from htmlrag_chat.html.blocks import page_title
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page


@dataclass(frozen=True)
class Distractors:
    """How single-page questions get their distractors."""

    pool: Sequence[PoolPage]
    k: int = 9
    mode: str = "hard"
    seed: int = 0


@dataclass(frozen=True)
class Ready:
    id: str
    query: str
    pages: list[PageInput]
    key: str  # the item's part of every result key: its text and its pages' bytes
    facts: dict[str, Any]  # what scoring needs: present snippets, or the answers


def ready_retention(item: RetentionItem, cache: EvalCache) -> Ready:
    data = read_page(item.file)
    key = key_of("retention", item.id, item.with_snippets, item.without_snippets, digest(data))
    page = PageInput(str(item.file), data)
    facts = cache.get(RESULTS, key_of(key, "facts"))
    if facts is None:
        raw = normalize(raw_text(page))
        present = {
            name: [s for s in snippets if normalize(s) and normalize(s) in raw]
            for name, snippets in (("with", item.with_snippets), ("without", item.without_snippets))
        }
        missing = len(item.with_snippets) + len(item.without_snippets)
        missing -= len(present["with"]) + len(present["without"])
        title = page_title(clean_page(page)[1])
        facts = {"query": title or item.id, **present, "missing": missing}
        cache.put(RESULTS, key_of(key, "facts"), facts)
    return Ready(item.id, facts["query"], [page], key, facts)


def ready_qa(item: QAItem, distractors: Distractors, cache: EvalCache) -> Ready:
    read = {path: read_page(path) for path in item.files}  # distractors are read below
    gold = [PoolPage(path, digest(data), "") for path, data in read.items()]
    pages = gold
    if item.distractors:
        seed = f"{distractors.seed}:{item.id}"
        chosen = pick_distractors(
            item.question, gold, distractors.pool, distractors.k, distractors.mode, seed
        )
        pages = mix(gold, chosen, seed)
    inputs = [
        PageInput(str(page.path), read.get(page.path) or read_page(page.path)) for page in pages
    ]
    key = key_of("qa", item.question, item.answers, [page.digest for page in pages])
    facts = cache.get(RESULTS, key_of(key, "facts"))
    if facts is None:
        text = "\n".join(raw_text(page) for page in inputs)
        present = answer_present(item.answers, text)
        facts = {"answers": list(item.answers), "answer_in_pages": present}
        cache.put(RESULTS, key_of(key, "facts"), facts)
    return Ready(item.id, item.question, inputs, key, facts)


def raw_text(page: PageInput) -> str:
    """What a browser would show of the page before any cleaning."""
    return visible_text(parse(decode_html(page.data, page.charset).utf8))


def score(task: str, facts: dict[str, Any], text: str) -> dict[str, Any]:
    """An item's scores for one context's visible text."""
    if task == "retention":
        return {
            "with_kept": kept(facts["with"], text),
            "without_kept": kept(facts["without"], text),
        }
    return {"answer": answer_present(facts["answers"], text)}


def describe(task: str, ready: Ready, folder: Path, item: RetentionItem | QAItem) -> dict[str, Any]:
    """An item's entry in the report, before its results; paths relative to the pages'
    folder (page files are named by their real paths: ``pages.inside``); a QA item's
    language and answer location when the dataset gives them."""
    pages = [os.path.relpath(page.source, os.path.realpath(folder)) for page in ready.pages]
    if task == "retention":
        return {
            "id": ready.id,
            "file": pages[0],
            "query": ready.query,
            "with": len(ready.facts["with"]),
            "without": len(ready.facts["without"]),
            "missing": ready.facts["missing"],
        }
    labels = {"lang": item.lang, "location": item.location} if isinstance(item, QAItem) else {}
    return {
        "id": ready.id,
        "pages": pages,
        "answer_in_pages": ready.facts["answer_in_pages"],
        **{key: value for key, value in labels.items() if value},
    }
