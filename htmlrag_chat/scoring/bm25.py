"""Okapi BM25 over block text: query-aware pruning that needs no model.

The blocks of one tree are the collection, so term rarity is judged within the pages being
pruned. The pruner's terms are analysed per language (``scoring.analysis``: stems, compound
halves, CJK bigrams). ``bm25_scores`` keeps the plain terms (casefolded word characters split
at punctuation, CJK per character) for the uses that must not move with the analysis: the
chunk baseline and distractor choice of ``eval``, and the extractive reader's sentences.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.text import CJK
from htmlrag_chat.scoring.analysis import analyze_all

_WORD = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    """BM25 terms of a text: casefolded words, CJK characters one by one."""
    return _WORD.findall(CJK.sub(r" \g<0> ", text.casefold()))


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


def bm25_scores(query: str, texts: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 of each text for the query, the texts themselves being the collection (blocks of
    a page, or the sentences an extractive reader chooses from), on plain terms."""
    return bm25(terms(query), [terms(text) for text in texts], k1, b)


def bm25(query: list[str], texts: list[list[str]], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 of each term list for the query's terms, the lists being the collection."""
    query_terms = set(query)
    documents = [Counter(terms) for terms in texts]
    if not documents or not query_terms:
        return [0.0] * len(documents)
    lengths = [sum(counts.values()) for counts in documents]
    average = sum(lengths) / len(lengths) or 1.0
    n = len(documents)
    idf = {
        term: math.log(1 + (n - df + 0.5) / (df + 0.5))
        for term in query_terms
        if (df := sum(1 for counts in documents if term in counts))
    }
    scores = []
    for counts, length in zip(documents, lengths, strict=True):
        norm = k1 * (1 - b + b * length / average)
        scores.append(
            sum(
                weight * counts[term] * (k1 + 1) / (counts[term] + norm)
                for term, weight in idf.items()
                if term in counts
            )
        )
    return scores
