"""From page bytes to pruned HTML: decode, clean, then per stage build blocks, score, prune.

Each step is a stage with progress events; the CLI turns them into a progress line and the
``--stats`` record, the chat app into its progress line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.base import cancel
from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import EventSink, Notice, ignore, stage
from htmlrag_chat.html.blocks import (
    DEFAULT_MAX_WORDS,
    BlockTree,
    Document,
    Page,
    build_block_tree,
    page_title,
)
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.dates import page_date
from htmlrag_chat.html.decode import decode_html, looks_binary
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.limits import check_page_size
from htmlrag_chat.html.prune import PruneResult, prune, token_costs
from htmlrag_chat.html.split import split_long_text
from htmlrag_chat.scoring import BlockScorer, ContextTooLong
from htmlrag_chat.scoring.bm25 import BM25Scorer


@dataclass(frozen=True)
class PageInput:
    """Raw page bytes and where they came from; ``charset`` as declared by the transport.
    A local document says its ``title`` and ``date`` (its modified day) itself; a web
    page's come from its markup."""

    source: str
    data: bytes
    charset: str | None = None
    title: str = ""
    date: str = ""


def clean_page(page: PageInput) -> tuple[Page, Element]:
    """Decode and clean one page; raises InputError for data that is not a web page."""
    check_page_size(page.source, len(page.data))  # a cache or recording may hold more
    if looks_binary(page.data):
        raise InputError(f"{page.source}: binary data, not HTML")
    utf8 = decode_html(page.data, page.charset).utf8
    html = clean_html(utf8)
    title = page.title or page_title(html)
    return Page(page.source, title, page.date or page_date(utf8)), html


@dataclass(frozen=True)
class Loaded:
    document: Document
    failures: dict[str, InputError]  # pages that could not be used, by source; the rest went on


# Pages cleaned once for a question, by source: its tree, or why it could not be cleaned.
Cleaned = dict[str, tuple[Page, Element] | InputError]


def load_pages(
    pages: Sequence[PageInput], emit: EventSink = ignore, kept: Cleaned | None = None
) -> Loaded:
    """Clean every page into one document; a page that fails is reported, not fatal.

    ``kept``: the pages an earlier round of the question has seen, cleaned (cleaning does
    not depend on the query) or as that round's pruning left them, which are taken as
    they are (counted as ``kept``), and to which the pages cleaned now are added. Their
    trees move into the new document: the earlier one is done with by then."""
    kept = {} if kept is None else kept
    cleaned: list[tuple[Page, Element]] = []
    failures: dict[str, InputError] = {}
    reused = 0
    with stage(emit, "clean", len(pages)) as counts:
        for page in pages:
            cancel.check()  # a stopped question ends between two pages
            if page.source in kept:
                reused += 1
            else:
                try:
                    kept[page.source] = clean_page(page)
                except InputError as error:
                    kept[page.source] = error
            done = kept[page.source]
            if isinstance(done, InputError):
                failures[page.source] = done
            else:
                cleaned.append(done)
        counts.update(pages=len(cleaned), failed=len(failures))
        if reused:
            counts["kept"] = reused
    return Loaded(Document.from_pages(cleaned), failures)


@dataclass(frozen=True)
class Stage:
    """One pruning pass: blocks of ``max_words`` scored by ``scorer``, pruned to ``budget``."""

    scorer: BlockScorer
    budget: int
    max_words: int = DEFAULT_MAX_WORDS


@dataclass(frozen=True)
class StageResult:
    name: str
    budget: int
    max_words: int
    result: PruneResult
    counts: dict[str, int]  # what the stage reported (blocks, tokens, model costs)


def prune_document(
    document: Document,
    query: str,
    stages: Sequence[Stage],
    counter: TokenCounter,
    emit: EventSink = ignore,
) -> list[StageResult]:
    """Run pruning stages in order, each on the previous one's output.

    Each stage builds its block tree on the pruned document in memory (no re-parsing), so
    the two-stage HtmlRAG pipeline is ``[Stage(embed, 8192, 256), Stage(gen, 4096, 128)]``
    (``recipe.Recipe.stages`` says which stages users run). Text runs longer than a block
    are cut first (``html.split``), so no paragraph is too long to be pruned in parts.
    The input document is never changed.
    """
    results = []
    for spec in stages:
        name = spec.scorer.name
        with stage(emit, f"{name}/blocks") as counts:
            tree = build_block_tree(split_long_text(document, spec.max_words), spec.max_words)
            counts["blocks"] = len(tree.blocks)
        with stage(emit, f"{name}/score", len(tree.blocks)) as counts:
            tree, scores = _score(spec, query, tree, counter, emit)
            costs = _model_costs(spec.scorer)
            counts.update(costs)
        with stage(emit, f"{name}/prune", len(tree.blocks)) as counts:
            result = prune(tree, scores, spec.budget, counter)
            counts.update(
                blocks=len(tree.blocks),
                blocks_kept=len(result.kept),
                tokens_before=result.tokens_before,
                tokens_after=result.tokens_after,
            )
        results.append(StageResult(name, spec.budget, spec.max_words, result, costs))
        document = result.document
    return results


_SHRINK_ATTEMPTS = 4


def _score(
    spec: Stage, query: str, tree: BlockTree, counter: TokenCounter, emit: EventSink
) -> tuple[BlockTree, list[float]]:
    """Score a tree; when it is too long for a generative scorer's context, BM25-prune it
    until it fits (the documented policy: the model reads the best part it can)."""
    for _ in range(_SHRINK_ATTEMPTS):
        try:
            return tree, spec.scorer.score(query, tree)
        except ContextTooLong as error:
            budget = int(token_costs(tree, counter).total * error.limit / error.needed * 0.9)
            emit(Notice(f"{error}: the input was first pruned with BM25 to {budget} tokens to fit"))
            smaller = prune(tree, BM25Scorer().score(query, tree), budget, counter)
            tree = build_block_tree(smaller.document, spec.max_words)
    return tree, spec.scorer.score(query, tree)


def _model_costs(scorer: BlockScorer) -> dict[str, int]:
    stats = getattr(scorer, "last_stats", None)
    return dict(vars(stats)) if stats is not None else {}
