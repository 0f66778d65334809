"""Block scorers: each gives every block of a tree a relevance score for a query.

Pruning keeps the highest-scoring blocks, so only the order of scores matters; scorers are
free to use any scale (BM25 weights, cosine similarities, log-probabilities).
"""

from __future__ import annotations

from typing import Protocol

from htmlrag_chat.html.blocks import BlockTree


class BlockScorer(Protocol):
    name: str

    def score(self, query: str, tree: BlockTree) -> list[float]: ...
