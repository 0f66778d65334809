"""Distractor pages for single-page questions, the way search results surround an answer.

The pool is every ``.html`` file under a folder (the dataset's by default). ``hard`` takes
the K pool pages that BM25 over their visible text ranks highest for the question: pages on
the same topic, like real search results. ``random`` takes K pages drawn with a seed. The
gold page, or any page with the same bytes, is never a distractor. It goes in at a seeded
position among them: always first, it would favour every method that truncates.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import EventSink, ignore, stage
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.eval.pages import inside, read_page
from htmlrag_chat.eval.stored import TEXTS, EvalCache, digest
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.lexical import bm25_scores
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

MODES = ("hard", "random")


@dataclass(frozen=True)
class PoolPage:
    path: Path
    digest: str  # of the page's bytes
    text: str  # visible text of the cleaned page, what BM25 ranks


def load_pool(folder: Path, cache: EvalCache, emit: EventSink = ignore) -> list[PoolPage]:
    """The pool's pages in path order, their texts from the cache where possible; pages
    that are not HTML or show no text are left out, and so is anything but a regular file
    (a FIFO named ``x.html`` would block the read). A page that resolves outside the
    folder is refused (``pages.inside``)."""
    if not folder.is_dir():
        raise InputError(f"{shown_path(folder)}: no such folder for the distractor pool")
    files = [
        inside(folder, path.relative_to(folder), "the distractor pool")
        for path in sorted(folder.rglob("*.html"))
    ]
    pages = []
    with stage(emit, "eval/pool", len(files)) as counts:
        for path in files:
            try:
                data = read_page(path)
            except InputError:  # not a regular file, over the page cap, unreadable
                continue
            key = digest(data)
            text = cache.get(TEXTS, key)
            if text is None:
                try:
                    text = visible_text(clean_page(PageInput(str(path), data))[1])
                except InputError:
                    text = ""
                cache.put(TEXTS, key, text)
            if text:
                pages.append(PoolPage(path, key, text))
        counts["pages"] = len(pages)
    return pages


def pick_distractors(
    question: str,
    gold: Sequence[PoolPage],
    pool: Sequence[PoolPage],
    k: int,
    mode: str,
    seed: str,
) -> list[PoolPage]:
    """K pool pages other than the gold ones: BM25's best for ``hard`` (ties by path),
    a draw seeded by ``seed`` for ``random``."""
    digests = {page.digest for page in gold}
    paths = {page.path.resolve() for page in gold}
    candidates = [
        page for page in pool if page.digest not in digests and page.path.resolve() not in paths
    ]
    if mode == "random":
        return random.Random(seed).sample(candidates, min(k, len(candidates)))
    scores = bm25_scores(question, [page.text for page in candidates])
    ranked = sorted(range(len(candidates)), key=lambda index: -scores[index])
    return [candidates[index] for index in ranked[:k]]


def mix(gold: Sequence[PoolPage], distractors: Sequence[PoolPage], seed: str) -> list[PoolPage]:
    """The gold pages, together, at a seeded position among the distractors."""
    position = random.Random(f"{seed}:gold").randint(0, len(distractors))
    return [*distractors[:position], *gold, *distractors[position:]]
