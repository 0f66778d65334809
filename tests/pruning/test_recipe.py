"""The recipe users run: block sizes from the budget, one stage or two."""

from __future__ import annotations

import pytest

from htmlrag_chat.pruning.recipe import Recipe, block_words
from htmlrag_chat.scoring.bm25 import BM25Scorer


@pytest.mark.parametrize(
    ("budget", "words"), [(128, 32), (512, 64), (1024, 128), (2048, 256), (8192, 256)]
)
def test_blocks_are_an_eighth_of_the_budget_between_32_and_256(budget, words):
    assert block_words(budget) == words


def test_one_stage_prunes_to_the_budget_at_its_block_size():
    first = BM25Scorer()
    (stage,) = Recipe(first).stages(512)
    assert (stage.scorer, stage.budget, stage.max_words) == (first, 512, 64)


def test_two_stages_prune_coarse_then_fine():
    first, second = BM25Scorer(), BM25Scorer(name="second")
    coarse, fine = Recipe(first, second).stages(1024)
    assert (coarse.scorer, coarse.budget, coarse.max_words) == (first, 2048, 256)
    assert (fine.scorer, fine.budget, fine.max_words) == (second, 1024, 128)
    coarse, fine = Recipe(first, second, coarse_budget=3000, max_words=50).stages(512)
    assert (coarse.budget, fine.max_words) == (3000, 50)
