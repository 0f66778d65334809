"""The default first stage: lexical, semantic and structural evidence for every block, fused
by rank.

BM25 and an embedding model find different answers: BM25 the block that repeats the
question's rare words (names, numbers), the embedding the paragraph that says the same thing
in other words. Both are easily fooled by boilerplate that repeats the page's words (menus,
"related articles"), which the main-content prior (``scoring.prior``) recognises by its
structure. Each block is read with its context (page title and nearest heading,
``html.headings``), then:

1. BM25 and the prior rank every block: microseconds a block, so 600 blocks cost nothing.
2. The embedding model reads only the ``candidates`` blocks that BM25 and the prior together
   rank highest, and only their first ``WINDOW_WORDS`` words. Embedding is the whole cost of
   a cold question on a CPU (about 25 full blocks a second on two cores); these two cuts make
   a cold question take a second instead of half a minute.
3. Reciprocal rank fusion orders the candidates (``sum(weight / (k + rank))``, k = 60 as in
   Cormack et al. 2009: ranks, not raw scores, so no scale dominates), the prior counting
   twice; the other blocks follow, ordered by BM25 and the prior alone.

Every choice was measured on ``../shared/corpus`` (docs/method.md has the figures). The
scores depend only on the query and the blocks, and ties go to the earlier block, so the
same input always prunes the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.headings import heading_context
from htmlrag_chat.scoring.bm25 import bm25_scores
from htmlrag_chat.scoring.prior import content_prior

RRF_K = 60
DEFAULT_CANDIDATES = 24
PRIOR_WEIGHT = 2.0  # the prior's say in the final order, against 1 for BM25 and embedding
# Words of a candidate (its context line included) the embedding model reads: about 128 of
# its tokens, half its window, at half the cost of a full window, with the same QA figures.
WINDOW_WORDS = 96


class Similarities(Protocol):
    """What the fused scorer needs of an embedding model (``embed.EmbeddingScorer``)."""

    encoded: int

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]: ...


@dataclass
class FusedStats:
    blocks: int
    candidates: int  # blocks the embedding model was asked about
    encoded: int  # texts embedded now, the question included (the rest came from the cache)


@dataclass
class FusedScorer:
    embedder: Similarities
    candidates: int = DEFAULT_CANDIDATES
    name: str = "fused"
    last_stats: FusedStats | None = None

    def score(self, query: str, tree: BlockTree) -> list[float]:
        texts = contextual_texts(tree)
        lexical = ranks(bm25_scores(query, texts))
        prior = ranks(content_prior(tree))
        structural = [rrf(index, (lexical, prior)) for index in range(len(texts))]
        chosen = ranking(structural)[: self.candidates]
        before = self.embedder.encoded
        semantic = self.embedder.similarities(query, [window(texts[index]) for index in chosen])
        self.last_stats = FusedStats(len(texts), len(chosen), self.embedder.encoded - before)
        return fuse(lexical, prior, chosen, semantic)


def contextual_texts(tree: BlockTree) -> list[str]:
    """Each block's text after its context line (see ``html.headings``)."""
    return [
        f"{context}: {block.text}" if context else block.text
        for context, block in zip(heading_context(tree), tree.blocks, strict=True)
    ]


def window(text: str) -> str:
    """The start of a text that the embedding model reads (``WINDOW_WORDS`` words)."""
    words = text.split(maxsplit=WINDOW_WORDS)
    return " ".join(words[:WINDOW_WORDS]) if len(words) > WINDOW_WORDS else text


def ranking(scores: Sequence[float]) -> list[int]:
    """Indices best first; ties go to the earlier index."""
    return sorted(range(len(scores)), key=lambda index: (-scores[index], index))


def ranks(scores: Sequence[float]) -> list[int]:
    """Each index's place in ``ranking`` (0 for the best)."""
    places = [0] * len(scores)
    for place, index in enumerate(ranking(scores)):
        places[index] = place
    return places


def rrf(index: int, rankings: Sequence[Sequence[int]], weights: Sequence[float] = ()) -> float:
    """Reciprocal rank fusion of ``index``'s places in ``rankings`` (weights default to 1)."""
    weights = weights or [1.0] * len(rankings)
    return sum(w / (RRF_K + places[index] + 1) for places, w in zip(rankings, weights, strict=True))


def fuse(
    lexical: Sequence[int],
    prior: Sequence[int],
    chosen: Sequence[int],
    semantic: Sequence[float],
) -> list[float]:
    """Scores from the lexical and prior places of every block and the semantic scores of the
    ``chosen`` ones: the chosen above all others (whose scores are below 0), each group in
    fused order."""
    rankings, weights = (lexical, prior), (1.0, PRIOR_WEIGHT)
    scores = [rrf(index, rankings, weights) - 1.0 for index in range(len(lexical))]
    semantic_places = ranks(semantic)
    for position, index in enumerate(chosen):
        scores[index] = rrf(index, rankings, weights) + 1 / (RRF_K + semantic_places[position] + 1)
    return scores
