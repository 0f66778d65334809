"""Okapi BM25 over block text: query-aware pruning that needs no model.

The blocks of one tree are the collection, so term rarity is judged within the pages being
pruned. The maths and the terms are ``lexical``'s, this module only hands it a tree's blocks:
the pruner's terms are analysed per language (``lexical.analysis``: stems, compound halves,
CJK bigrams), while ``lexical``'s plain terms stay for the uses that must not move with the
analysis: the chunk baseline and distractor choice of ``eval``, and the extractive reader's
sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.lexical.analysis import lexical_scores


@dataclass
class BM25Scorer:
    k1: float = 1.5
    b: float = 0.75
    name: str = "bm25"

    def score(self, query: str, tree: BlockTree) -> list[float]:
        texts = [block.text for block in tree.blocks]
        return lexical_scores(query, texts, [block.page for block in tree.blocks], self.k1, self.b)
