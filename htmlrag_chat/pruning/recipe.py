"""What users run: the pruning stages, their granularity and budgets, in one place.

``ask``, the chat app, ``prune`` and ``eval``'s ``default`` method all prune with
``Recipe.stages``, so the figures in the README are the ones users get. Loading the models
a recipe names (and falling back when one is missing) is ``pruning.factory.build_recipe``'s
job; this module only decides the shape, so it imports no model code.

Granularity follows the budget (``block_words``): the paper's 256-word blocks suit its 4K+
token budgets, but at 512 tokens one such block (about 350 tokens of text and tags) fills
the budget alone, and keeping or dropping it is a coin toss between whole sections. A block
of an eighth of the budget in words lets about eight blocks from different places compete.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.html.blocks import DEFAULT_MAX_WORDS
from htmlrag_chat.pruning.pipeline import Stage
from htmlrag_chat.scoring import BlockScorer

COARSE_FACTOR = 2  # two-stage: the first stage prunes to this many times the final budget
FINE_MAX_WORDS = 128  # the generative stage's granularity in the paper
MIN_BLOCK_WORDS = 32  # below this a block is a phrase; tags would cost more than its words
BUDGET_PER_WORD = 8  # budget tokens per block word: about eight blocks fill a budget


def block_words(budget: int) -> int:
    """Words per block for a stage pruning to ``budget`` tokens: an eighth of the budget,
    between 32 and the paper's 256 (512 -> 64, 1024 -> 128, 2048 and up -> 256)."""
    return max(MIN_BLOCK_WORDS, min(DEFAULT_MAX_WORDS, budget // BUDGET_PER_WORD))


@dataclass(frozen=True)
class Recipe:
    """Loaded scorers and how they prune: ``first`` alone, or ``first`` to the coarse
    budget and then ``second`` (the generative pruner) to the budget."""

    first: BlockScorer
    second: BlockScorer | None = None
    coarse_budget: int | None = None  # default: COARSE_FACTOR x the budget
    max_words: int | None = None  # the last stage's block size (default: ``block_words``)
    coarse_max_words: int | None = None  # the first stage's when there are two

    def stages(self, budget: int) -> list[Stage]:
        if self.second is None:
            return [Stage(self.first, budget, self.max_words or block_words(budget))]
        coarse = self.coarse_budget or COARSE_FACTOR * budget
        fine = self.max_words or min(FINE_MAX_WORDS, block_words(budget))
        return [
            Stage(self.first, coarse, self.coarse_max_words or block_words(coarse)),
            Stage(self.second, budget, fine),
        ]
