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
4. Boilerplate goes (``html.prune.DISCARD``) even when the budget has room for it: a block
   outside the main text of a page that has one, unless it is among the ``ESCAPE_PLACES``
   best by the fused evidence and its own words (not the context line lent to it) are among
   the ``ESCAPE_PLACES`` best BM25 matches. Pruning alone fills the budget, and on a page
   whose article is shorter than the budget it filled the rest with menus and "most
   popular" lists; the escape keeps what trafilatura leaves out but the question asks for
   (a recipe card, an infobox). Eight is about the number of blocks that fill a budget
   (``recipe.block_words``). A block that answers beyond its page's title is more than
   kept: it is ``claimed`` as main text (bonus included), since trafilatura can leave out
   an ingredient list or a results box and take in a "related articles" teaser, which the
   bonus then put first.

5. A question in a known language other than English (``lexical.language``) is read by the
   ``multilingual`` embedding model when there is one (``wiring``: the default model was
   kept and the multilingual one is on disk); without one, an ``english_only`` model gives
   no opinion and BM25's order stands: all-MiniLM-L6-v2 reads English only, and its ranks
   of a Hungarian ingredient list for a Hungarian question sent it to the boilerplate.

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
from htmlrag_chat.html.prune import DISCARD
from htmlrag_chat.lexical import bm25_by_term, sum_by_text
from htmlrag_chat.lexical.analysis import analyze_all, lexical_scores, tokens
from htmlrag_chat.lexical.language import script_language
from htmlrag_chat.scoring.content import main_content

RRF_K = 60
CONTENT_BONUS = 1 / (RRF_K + 1)  # main content: as if ranked first by a third opinion
DEFAULT_CANDIDATES = 24
# Words of a candidate (its context line included) the embedding model reads: about 128 of
# its tokens, half its window, at half the cost of a full window, with the same QA figures.
WINDOW_WORDS = 96
ESCAPE_PLACES = 8  # boilerplate stays only this high in both the fused and its own ranking
CLAIM_PLACES = 2 * ESCAPE_PLACES  # fused places of a block claimed as main text


class Similarities(Protocol):
    """What the fused scorer needs of an embedding model (``embed.EmbeddingScorer``)."""

    encoded: int

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]: ...


@dataclass
class FusedStats:
    blocks: int
    candidates: int  # blocks the embedding model was asked about
    encoded: int  # texts embedded now, the question included (the rest came from the cache)
    boilerplate: int  # blocks discarded as outside the main text


@dataclass
class FusedScorer:
    """``embedder`` None: no embedding model is installed (the core install without the
    bundled one), and the lexical and main-content evidence decide alone."""

    embedder: Similarities | None
    candidates: int = DEFAULT_CANDIDATES
    name: str = "fused"
    last_stats: FusedStats | None = None
    multilingual: Similarities | None = None  # for questions in another language than English
    english_only: bool = False  # whether ``embedder`` reads English only (the default model)

    def embedder_for(self, query: str) -> Similarities | None:
        """The ``multilingual`` model for a question in a known language other than
        English; for such a question without one, None when ``embedder`` reads English
        only (its ranks of German blocks for a German question are noise); else
        ``embedder`` (a question too short to tell included)."""
        language = script_language(query, tokens(query)[0])
        if language in ("", "en"):
            return self.embedder
        if self.multilingual is not None:
            return self.multilingual
        return None if self.english_only else self.embedder

    def score(self, query: str, tree: BlockTree) -> list[float]:
        texts = contextual_texts(tree)
        pages = [block.page for block in tree.blocks]
        lexical = ranks(lexical_scores(query, texts, pages))
        chosen = sorted(range(len(texts)), key=lexical.__getitem__)[: self.candidates]
        encoded = 0
        embedder = self.embedder_for(query)
        if embedder is None:  # no model reads the question: BM25's order stands for both
            semantic = [-float(lexical[index]) for index in chosen]
        else:
            before = embedder.encoded
            semantic = embedder.similarities(query, [window(texts[i]) for i in chosen])
            encoded = embedder.encoded - before
        evidence = fuse(lexical, chosen, semantic)
        own, beyond = own_matches(query, tree)
        content = claimed(main_content(tree), pages, evidence, own, beyond)
        discard = boilerplate(pages, content, evidence, own)
        embedded = len(chosen) if embedder is not None else 0  # candidates a model read
        self.last_stats = FusedStats(len(texts), embedded, encoded, len(discard))
        return final_scores(evidence, content, discard)


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


def fuse(lexical: Sequence[int], chosen: Sequence[int], semantic: Sequence[float]) -> list[float]:
    """Scores from every block's lexical place and the ``chosen`` blocks' semantic scores:
    the chosen above all others (whose scores are below 0)."""
    scores = [1 / (RRF_K + place + 1) - 1.0 for place in lexical]
    semantic_places = ranks(semantic)
    for position, index in enumerate(chosen):
        scores[index] += 1.0 + 1 / (RRF_K + semantic_places[position] + 1)
    return scores


def final_scores(
    evidence: Sequence[float], content: Sequence[bool], discard: Sequence[int]
) -> list[float]:
    """What pruning gets: the evidence plus the main-content bonus, ``DISCARD`` for the
    blocks in ``discard``."""
    scores = [
        score + (CONTENT_BONUS if is_content else 0.0)
        for score, is_content in zip(evidence, content, strict=True)
    ]
    for index in discard:
        scores[index] = DISCARD
    return scores


def own_matches(query: str, tree: BlockTree) -> tuple[list[float], list[float]]:
    """BM25 of each block's own words (not its context line): on all the question's terms,
    and on those its page title lacks (the words a block that only echoes the title, such
    as "More about <title>" or a breadcrumb, cannot match)."""
    texts = [block.text for block in tree.blocks]
    titles = [page.title for page in tree.document.pages]
    pages = [block.page for block in tree.blocks]
    query_terms, documents = analyze_all(query, texts + titles, pages + list(range(len(titles))))
    shares = bm25_by_term(query_terms, documents[: len(texts)])
    title_terms = [set(terms) for terms in documents[len(texts) :]]
    beyond = [
        sum(column[index] for term, column in shares.items() if term not in title_terms[page])
        for index, page in enumerate(pages)
    ]
    return sum_by_text(shares, len(texts)), beyond


def claimed(
    content: Sequence[bool],
    pages: Sequence[int],
    evidence: Sequence[float],
    own: Sequence[float],
    beyond: Sequence[float],
) -> list[bool]:
    """The main text as trafilatura found it, plus the blocks outside it that the question
    asks for: among the ``CLAIM_PLACES`` best by the fused evidence and the
    ``ESCAPE_PLACES`` best by their ``own`` words, some of which match the question
    ``beyond`` their page's title. trafilatura leaves out an ingredient list or a results
    box and takes in a "related articles" teaser; a claimed block is judged as main text
    (the bonus, no discard). A block that only repeats the title ("More about <title>", a
    breadcrumb) is never claimed, however well it matches."""
    with_content = {page for page, is_content in zip(pages, content, strict=True) if is_content}
    fused = set(ranking(evidence)[:CLAIM_PLACES])
    matched = {index for index in ranking(own)[:ESCAPE_PLACES] if beyond[index] > 0}
    return [
        is_content or (page in with_content and index in fused & matched)
        for index, (is_content, page) in enumerate(zip(content, pages, strict=True))
    ]


def boilerplate(
    pages: Sequence[int], content: Sequence[bool], evidence: Sequence[float], own: Sequence[float]
) -> list[int]:
    """Blocks outside the main text of their page (pages where trafilatura found none are
    left alone), unless both the fused ``evidence`` and their ``own`` BM25 scores put them
    among the ``ESCAPE_PLACES`` best."""
    with_content = {page for page, is_content in zip(pages, content, strict=True) if is_content}
    vouched = set(ranking(evidence)[:ESCAPE_PLACES]) & {
        index for index in ranking(own)[:ESCAPE_PLACES] if own[index] > 0
    }
    return [
        index
        for index, (page, is_content) in enumerate(zip(pages, content, strict=True))
        if not is_content and page in with_content and index not in vouched
    ]
