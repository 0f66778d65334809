"""From page bytes to pruned HTML: decode, clean, build blocks, score, prune.

Each step is a stage with progress events; the CLI turns them into a progress line and the
``--stats`` record, later the TUI into its status bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.errors import InputError
from htmlrag_chat.events import EventSink, ignore, stage
from htmlrag_chat.html.blocks import DEFAULT_MAX_WORDS, Document, Page, build_block_tree, page_title
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.decode import decode_html, looks_binary
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.prune import PruneResult, prune
from htmlrag_chat.scoring import BlockScorer
from htmlrag_chat.tokens import TokenCounter


@dataclass(frozen=True)
class PageInput:
    """Raw page bytes and where they came from; ``charset`` as declared by the transport."""

    source: str
    data: bytes
    charset: str | None = None


def clean_page(page: PageInput) -> tuple[Page, Element]:
    """Decode and clean one page; raises InputError for data that is not a web page."""
    if looks_binary(page.data):
        raise InputError(f"{page.source}: binary data, not HTML")
    html = clean_html(decode_html(page.data, page.charset).text)
    return Page(page.source, page_title(html)), html


@dataclass(frozen=True)
class Loaded:
    document: Document
    failures: list[InputError]  # pages that could not be used; the rest went on


def load_pages(pages: Sequence[PageInput], emit: EventSink = ignore) -> Loaded:
    """Clean every page into one document; a page that fails is reported, not fatal."""
    cleaned: list[tuple[Page, Element]] = []
    failures: list[InputError] = []
    with stage(emit, "clean", len(pages)) as counts:
        for page in pages:
            try:
                cleaned.append(clean_page(page))
            except InputError as error:
                failures.append(error)
        counts.update(pages=len(cleaned), failed=len(failures))
    return Loaded(Document.from_pages(cleaned), failures)


def prune_document(
    document: Document,
    query: str,
    budget: int,
    scorer: BlockScorer,
    counter: TokenCounter,
    max_words: int = DEFAULT_MAX_WORDS,
    emit: EventSink = ignore,
) -> PruneResult:
    """Prune a document to ``budget`` tokens, keeping the blocks ``scorer`` ranks highest."""
    with stage(emit, "blocks") as counts:
        tree = build_block_tree(document, max_words)
        counts["blocks"] = len(tree.blocks)
    with stage(emit, "score", len(tree.blocks)) as counts:
        scores = scorer.score(query, tree)
        counts["blocks"] = len(scores)
    with stage(emit, "prune", len(tree.blocks)) as counts:
        result = prune(tree, scores, budget, counter)
        counts.update(
            blocks_kept=len(result.kept),
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after,
        )
    return result
