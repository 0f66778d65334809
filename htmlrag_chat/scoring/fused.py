"""The default first stage: lexical and semantic evidence for every block, fused by rank.

BM25 and an embedding model find different answers: BM25 the block that repeats the
question's rare words (names, numbers), the embedding the paragraph that says the same thing
in other words. Each block is read with its context (page title and nearest heading,
``html.headings``), then:

1. BM25 ranks every block: microseconds a block, so a page of 600 blocks costs nothing.
2. The embedding model reads only the ``candidates`` blocks BM25 ranks highest, and only
   their first ``WINDOW_WORDS`` words. Embedding is the whole cost of a cold question on a
   CPU (about 25 full blocks a second on two cores), and a block with no lexical hold on the
   question rarely wins anyway; these two cuts make a cold question take a second instead
   of half a minute.
3. The candidates are ordered by reciprocal rank fusion of the two rankings
   (``1/(k + bm25 rank) + 1/(k + embedding rank)``, k = 60 as in Cormack et al. 2009): ranks,
   not raw scores, so neither scale dominates. The other blocks follow, in BM25 order.

The scores depend only on the query and the blocks' text, and ties go to the earlier block,
so the same input always prunes the same way.
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
    encoded: int  # of those, embedded now (the rest came from the cache)


@dataclass
class FusedScorer:
    embedder: Similarities
    candidates: int = DEFAULT_CANDIDATES
    prior: bool = True  # rank by the main-content prior too (``scoring.prior``)
    prior_weight: float = 1.0
    choose_with_prior: bool = False
    name: str = "fused"
    last_stats: FusedStats | None = None

    def score(self, query: str, tree: BlockTree) -> list[float]:
        texts = contextual_texts(tree)
        lexical = bm25_scores(query, texts)
        prior = content_prior(tree) if self.prior else None
        if prior is not None and self.choose_with_prior:
            pre = [_rrf(i, [_ranks(lexical), _ranks(prior)]) for i in range(len(texts))]
            chosen = ranking(pre)[: self.candidates]
        else:
            chosen = ranking(lexical)[: self.candidates]
        before = self.embedder.encoded
        semantic = self.embedder.similarities(query, [window(texts[index]) for index in chosen])
        self.last_stats = FusedStats(len(texts), len(chosen), self.embedder.encoded - before)
        return fuse(lexical, chosen, semantic, prior, self.prior_weight)


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


def fuse(
    lexical: Sequence[float],
    chosen: Sequence[int],
    semantic: Sequence[float],
    prior: Sequence[float] | None = None,
    prior_weight: float = 1.0,
) -> list[float]:
    """Scores that order the ``chosen`` blocks by reciprocal rank fusion of their lexical,
    semantic and (when given) prior ranks, above every other block; those follow by the
    fusion of their lexical and prior ranks."""
    rankings = [_ranks(lexical)]
    if prior is not None:
        rankings += [_ranks(prior)] * int(prior_weight)
    scores = [_rrf(index, rankings) - 1.0 for index in range(len(lexical))]  # all below 0
    by_semantic = {chosen[position]: rank for rank, position in enumerate(ranking(semantic))}
    for index in chosen:
        scores[index] = _rrf(index, rankings) + 1 / (RRF_K + by_semantic[index] + 1)
    return scores


def _ranks(scores: Sequence[float]) -> list[int]:
    ranks = [0] * len(scores)
    for rank, index in enumerate(ranking(scores)):
        ranks[index] = rank
    return ranks


def _rrf(index: int, rankings: Sequence[Sequence[int]]) -> float:
    return sum(1 / (RRF_K + ranks[index] + 1) for ranks in rankings)
