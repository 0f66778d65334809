from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest

from htmlrag_chat.html.blocks import BlockKind, Document, Page, build_block_tree, serialize
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.prune import (
    DISCARD,
    TokenEstimate,
    deletion_order,
    prune,
    token_costs,
)
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.tokens import ApproxTokenCounter


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
    rng = random.Random(7)
    scores = [rng.random() for _ in tree.blocks]
    assert len(set(scores)) == len(scores)  # every block ranked differently, no ties
    result = prune(tree, scores, budget, tiny_counter)
    html = result.document.to_html()
    assert result.tokens_after == tiny_counter.count(html) <= budget
    if budget >= result.tokens_before:
        assert len(result.kept) == len(tree.blocks)


@pytest.mark.parametrize("seed", range(5))
def test_the_highest_scoring_blocks_that_fit_are_the_ones_kept(tiny_counter, seed):
    rng = random.Random(seed)
    html = (
        "<body>"
        + "".join(
            f"<p>para{i} " + " ".join(f"tok{i}x{j}" for j in range(rng.randint(2, 40))) + "</p>"
            for i in range(30)
        )
        + "</body>"
    )
    tree = build_block_tree(document(html), max_words=16)
    scores = [rng.random() for _ in tree.blocks]
    budget = 300
    result = prune(tree, scores, budget, tiny_counter)
    kept = set(result.kept)
    assert 0 < len(kept) < len(tree.blocks) and result.rounds == 1
    order = deletion_order(scores)
    costs = token_costs(tree, tiny_counter)
    # The paper's Algorithm 2 (delete lowest until it fits) keeps a prefix of the ranking:
    # all of it is kept here too.
    estimate = TokenEstimate(tree, costs)
    cut = 0
    while estimate.total > budget:
        estimate.delete(order[cut])
        cut += 1
    assert set(order[cut:]) <= kept
    # And every block left out would not have fit next to the ones kept.
    estimate = TokenEstimate(tree, costs)
    for index in set(range(len(tree.blocks))) - kept:
        estimate.delete(index)
    for index in set(range(len(tree.blocks))) - kept:
        assert estimate.total + estimate.restore_cost(index) > budget
    text = visible_text(result.document.root)
    for block in tree.blocks:
        assert (block.text in text) == (block.index in kept)


def test_a_large_top_block_does_not_leave_the_budget_empty(tiny_counter):
    big = "<p>" + " ".join(f"big{i}" for i in range(200)) + "</p>"
    small = "".join(f"<p>small{i} words here</p>" for i in range(10))
    tree = build_block_tree(document(f"<body>{big}{small}</body>"), max_words=210)
    scores = [1.0 if "big0" in b.text else 0.5 for b in tree.blocks]
    # Room for all the small ones with the block-wise estimate's slack, none for the big one.
    budget = int(tiny_counter.count(document(f"<body>{small}</body>").to_html()) * 1.3)
    assert tiny_counter.count(big) > budget
    result = prune(tree, scores, budget, tiny_counter)
    text = visible_text(result.document.root)
    assert "big0" not in text  # it cannot fit
    assert all(f"small{i} " in text + " " for i in range(10))  # everything else does


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


def test_a_discarded_block_goes_even_when_the_budget_has_room():
    tree = build_block_tree(document(unique_paragraphs(4)), max_words=8)
    counter = ApproxTokenCounter()
    everything = token_costs(tree, counter).total * 2
    scores = [1.0] * len(tree.blocks)
    scores[1] = DISCARD
    result = prune(tree, scores, everything, counter)
    assert result.kept == [index for index in range(len(tree.blocks)) if index != 1]
    assert tree.blocks[1].text not in result.document.to_html()
