"""What the reader receives: pruned HTML as HTML, Markdown or text, and budgets that count it."""

from __future__ import annotations

import pytest

from htmlrag_chat.html.blocks import build_block_tree
from htmlrag_chat.html.prune import prune
from htmlrag_chat.html.rendering import RENDERINGS, RenderedCounter, render, rendered_counter
from htmlrag_chat.pruning.pipeline import PageInput, load_pages
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.settings.tree import RENDERINGS as SETTING_CHOICES
from tests.conftest import PAGES

TWO_PAGES = (
    "<html><head><title>One</title></head><body><h2>Prices</h2><table><tr><th>Model</th>"
    "<th>Price</th></tr><tr><td>A</td><td>9 EUR</td></tr></table></body></html>\n"
    "<html><head><title>Two</title></head><body><ul><li>red</li><li>green [3]</li></ul>"
    "</body></html>"
)


def test_the_setting_offers_exactly_the_renderings() -> None:
    assert SETTING_CHOICES == RENDERINGS == ("html", "markdown", "text")


def test_every_page_of_a_document_is_rendered_tables_as_tables_lists_as_items() -> None:
    assert render(TWO_PAGES, "html") == TWO_PAGES
    assert render(TWO_PAGES, "markdown").splitlines() == [
        "## Prices",
        "",
        "| Model | Price |",
        "| --- | --- |",
        "| A | 9 EUR |",
        "",
        "- red",
        "- green [3]",
    ]
    assert render(TWO_PAGES, "text").splitlines() == [
        "Prices", "Model", "Price", "A", "9 EUR", "red", "green [3]",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="no rendering 'pdf'"):
        render(TWO_PAGES, "pdf")


def test_a_row_or_an_item_pruned_apart_from_its_table_or_list_keeps_its_markup() -> None:
    """Pruning counts blocks one by one: a row costs what it costs as a row."""
    assert render("<tr><td>A</td><td>9 EUR</td></tr>", "markdown") == "| A | 9 EUR |"
    assert render("<li>red</li>", "markdown") == "- red"


def test_the_counter_counts_the_rendering_and_html_is_left_alone(tiny_counter) -> None:
    assert rendered_counter(tiny_counter, "html") is tiny_counter
    markdown = rendered_counter(tiny_counter, "markdown")
    assert isinstance(markdown, RenderedCounter) and markdown.name.endswith("+markdown")
    assert markdown.count(TWO_PAGES) == tiny_counter.count(render(TWO_PAGES, "markdown"))
    assert markdown.count(TWO_PAGES) < tiny_counter.count(TWO_PAGES)
    assert markdown.count_many(["<p>a</p>", "<li>b</li>"]) == tiny_counter.count_many(["a", "- b"])
    with pytest.raises(ValueError):
        rendered_counter(tiny_counter, "pdf")


@pytest.mark.parametrize("rendering", ["markdown", "text"])
def test_a_leaner_rendering_fits_more_of_the_pages_in_the_same_budget(
    tiny_counter, rendering: str
) -> None:
    pages = [PageInput(page.name, page.data) for page in PAGES[:3]]
    document = load_pages(pages).document
    tree = build_block_tree(document, 64)
    scores = BM25Scorer().score("license price table", tree)
    budget = 600
    as_html = prune(tree, scores, budget, tiny_counter)
    counter = rendered_counter(tiny_counter, rendering)
    leaner = prune(build_block_tree(document, 64), scores, budget, counter)
    rendered = render(leaner.document.to_html(), rendering)
    assert tiny_counter.count(rendered) <= budget  # what the reader gets fits
    assert leaner.tokens_after == tiny_counter.count(rendered)
    assert len(leaner.kept) > len(as_html.kept)  # and more blocks came with it
