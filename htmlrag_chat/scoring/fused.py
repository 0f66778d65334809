"""The default first stage: lexical, semantic and main-content evidence, fused by rank.

BM25 and an embedding model find different answers: BM25 the block that repeats the
question's rare words (names, numbers), the embedding the paragraph that says the same thing
in other words. Both are fooled by boilerplate that repeats the page's words (menus, "related
articles"), which trafilatura's main-text extraction recognises (``scoring.content``). Each
block is read with its context (page title and nearest heading, ``html.headings``), then:

1. BM25 ranks every block: microseconds a block, so 600 blocks cost nothing.
2. The embedding model reads only the ``candidates`` blocks BM25 ranks highest, and only
   their first ``WINDOW_WORDS`` words. Embedding is the whole cost of a cold question on a CPU
   (about 25 full blocks a second on two cores); these two cuts make a cold question take a
   second instead of half a minute.
3. Reciprocal rank fusion orders the candidates: ``1/(k + BM25 rank) + 1/(k + embedding
   rank)``, k = 60 as in Cormack et al. 2009 (ranks, not raw scores, so no scale dominates),
   plus ``1/(k + 1)`` for main content: what coming first in a third ranking would give. The
   other blocks follow, by BM25 and the same bonus.

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
from htmlrag_chat.scoring.content import main_content

RRF_K = 60
CONTENT_BONUS = 1 / (RRF_K + 1)  # main content: as if ranked first by a third opinion
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
        chosen = sorted(range(len(texts)), key=lexical.__getitem__)[: self.candidates]
        before = self.embedder.encoded
        semantic = self.embedder.similarities(query, [window(texts[index]) for index in chosen])
        self.last_stats = FusedStats(len(texts), len(chosen), self.embedder.encoded - before)
        return fuse(lexical, chosen, semantic, main_content(tree))


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


def fuse(
    lexical: Sequence[int],
    chosen: Sequence[int],
    semantic: Sequence[float],
    content: Sequence[bool],
) -> list[float]:
    """Scores from every block's lexical place and main-content flag and the ``chosen``
    blocks' semantic scores: the chosen above all others (whose scores are below 0)."""
    scores = [
        1 / (RRF_K + place + 1) + (CONTENT_BONUS if is_content else 0.0) - 1.0
        for place, is_content in zip(lexical, content, strict=True)
    ]
    semantic_places = ranks(semantic)
    for position, index in enumerate(chosen):
        scores[index] += 1.0 + 1 / (RRF_K + semantic_places[position] + 1)
    return scores
