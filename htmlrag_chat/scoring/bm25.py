"""Okapi BM25 over block text: query-aware pruning that needs no model.

The blocks of one tree are the collection, so term rarity is judged within the pages being
pruned. The pruner's terms are analysed per language (``scoring.analysis``: stems, compound
halves, CJK bigrams); the formula is ``lexical``'s, whose plain terms stay for the uses that
must not move with the analysis: the chunk baseline and distractor choice of ``eval``, and
the extractive reader's sentences.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.lexical import bm25
from htmlrag_chat.scoring.analysis import analyze_all


@dataclass
class BM25Scorer:
    k1: float = 1.5
    b: float = 0.75
    name: str = "bm25"

    def score(self, query: str, tree: BlockTree) -> list[float]:
        texts = [block.text for block in tree.blocks]
        return lexical_scores(query, texts, [block.page for block in tree.blocks], self.k1, self.b)


def lexical_scores(
    query: str, texts: list[str], pages: list[int], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """BM25 of each text on terms analysed in its language (``pages[i]``: text i's page,
    whose language a text too short to tell takes)."""
    query_terms, documents = analyze_all(query, texts, pages)
    return bm25(query_terms, documents, k1, b)
