"""Okapi BM25 over block text: query-aware pruning that needs no model.

The blocks of one tree are the collection, so term rarity is judged within the pages being
pruned. The terms and the formula are ``lexical``'s, shared with the extractive reader.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.lexical import bm25_scores


@dataclass
class BM25Scorer:
    k1: float = 1.5
    b: float = 0.75
    name: str = "bm25"

    def score(self, query: str, tree: BlockTree) -> list[float]:
        return bm25_scores(query, [block.text for block in tree.blocks], self.k1, self.b)
