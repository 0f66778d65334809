from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from htmlrag_chat.html.blocks import BlockKind, Document, Page, build_block_tree, serialize
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.prune import deletion_order, prune
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.tokens import ApproxTokenCounter


def document(*htmls: str) -> Document:
    return Document.from_pages([(Page(f"p{i}"), clean_html(h)) for i, h in enumerate(htmls)])


def unique_paragraphs(n: int) -> str:
    return (
        "<body>"
        + "".join(
            f"<p>para{i} " + " ".join(f"tok{i}x{j}" for j in range(8)) + "</p>" for i in range(n)
        )
        + "</body>"
    )


@dataclass
class MeteredCounter:
    """Counts how many characters a counter is asked to tokenize."""

    inner: object
    name: str = "metered"
    exact: bool = True
    characters: int = 0
    calls: list[int] = field(default_factory=list)

    def count(self, text: str) -> int:
        self.characters += len(text)
        return self.inner.count(text)

    def count_many(self, texts):
        self.characters += sum(len(t) for t in texts)
        return self.inner.count_many(texts)


@pytest.mark.parametrize("budget", [1, 64, 256, 1024, 4096])
def test_output_fits_the_budget_on_real_pages(fixture_page, tiny_counter, budget):
    tree = build_block_tree(document(fixture_page.data.decode("utf-8")), max_words=64)
    scores = [random.Random(7).random() for _ in tree.blocks]
    result = prune(tree, scores, budget, tiny_counter)
    html = result.document.to_html()
    assert result.tokens_after == tiny_counter.count(html) <= budget
    if budget >= result.tokens_before:
        assert len(result.kept) == len(tree.blocks)


def test_the_highest_scoring_blocks_are_the_ones_kept(tiny_counter):
    tree = build_block_tree(document(unique_paragraphs(30)), max_words=16)
    rng = random.Random(3)
    scores = [rng.random() for _ in tree.blocks]
    result = prune(tree, scores, 200, tiny_counter)
    kept = set(result.kept)
    assert 0 < len(kept) < len(tree.blocks)
    # Every kept block outranks every deleted one.
    assert min(scores[i] for i in kept) > max(
        scores[i] for i in range(len(scores)) if i not in kept
    )
    text = visible_text(result.document.root)
    for block in tree.blocks:
        assert (block.text in text) == (block.index in kept)


def test_ties_delete_later_blocks_first():
    assert deletion_order([1.0, 0.0, 1.0, 0.0]) == [3, 1, 2, 0]


def test_deleting_loose_text_keeps_the_children(tiny_counter):
    html = (
        "<body><div>loose words here "
        + "".join(f"<p>child{i} " + "filler " * 6 + "</p>" for i in range(4))
        + "</div></body>"
    )
    tree = build_block_tree(document(html), max_words=10)
    scores = [0.0 if b.kind is BlockKind.TEXT else 1.0 for b in tree.blocks]
    full = tiny_counter.count(tree.document.to_html())
    result = prune(tree, scores, full - 1, tiny_counter)
    text = visible_text(result.document.root)
    assert "loose" not in text
    assert all(f"child{i}" in text for i in range(4))


def test_pruning_leaves_the_input_tree_alone(tiny_counter):
    tree = build_block_tree(document(unique_paragraphs(10)), max_words=16)
    before = tree.document.to_html()
    prune(tree, [0.0] * len(tree.blocks), 50, tiny_counter)
    assert tree.document.to_html() == before


def test_output_is_whole_html_never_cut_inside_a_tag(fixture_page, tiny_counter):
    tree = build_block_tree(document(fixture_page.data.decode("utf-8")), max_words=32)
    result = prune(tree, [float(-i) for i in range(len(tree.blocks))], 300, tiny_counter)
    # Balanced HTML survives cleaning unchanged; a cut tag would be repaired or mangled.
    for page in result.document.root:
        html = serialize(page)
        assert serialize(clean_html(html)) == html


def test_emptied_pages_are_dropped_with_their_metadata(tiny_counter):
    doc = document("<body><p>" + "alpha " * 20 + "</p></body>", "<body><p>beta words</p></body>")
    tree = build_block_tree(doc, max_words=8)
    scores = [1.0 if "beta" in b.text else 0.0 for b in tree.blocks]
    budget = tiny_counter.count(doc.page_html(1))
    result = prune(tree, scores, budget, tiny_counter)
    assert [page.source for page in result.document.pages] == ["p1"]
    assert len(result.document.root) == 1


def test_cost_is_linear_not_per_deleted_block(fixture_page, tiny_counter):
    tree = build_block_tree(document(fixture_page.data.decode("utf-8")), max_words=32)
    metered = MeteredCounter(tiny_counter)
    result = prune(tree, [0.0] * len(tree.blocks), 64, metered)
    assert len(tree.blocks) - len(result.kept) > 20
    # Blocks once, the document once, the output once per round: a few times the page.
    assert metered.characters < 3 * len(tree.document.to_html())


def test_approximate_counter_budgets_hold_too(fixture_page):
    counter = ApproxTokenCounter()
    tree = build_block_tree(document(fixture_page.data.decode("utf-8")), max_words=64)
    result = prune(tree, [0.0] * len(tree.blocks), 500, counter)
    assert counter.count(result.document.to_html()) <= 500


def test_score_count_must_match_blocks(tiny_counter):
    tree = build_block_tree(document(unique_paragraphs(3)), max_words=4)
    with pytest.raises(ValueError):
        prune(tree, [1.0], 10, tiny_counter)
