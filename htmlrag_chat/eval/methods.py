"""The contexts compared: our HTML pruning and the baselines a user would otherwise pick.

Each method prepares once per item (the query-independent and query-dependent work that no
budget changes) and then fits the result to each budget, so a method's time at a budget is
its preparation plus that fit. Every method starts from the raw page bytes and does all of
its own work: no cleaning, tree or embedding is shared between methods, so their times
compare. All of them count with the same tokenizer. A fit gives the context as one string
(what ``eval qa`` scores) and per page (``Piece``: what ``eval answers`` numbers as sources).

- ``plain``: trafilatura's main text (tables included) of each page, truncated.
- ``chunk-bm25``, ``chunk-embed``: the visible text of the cleaned pages in chunks
  (``chunks.CHUNK_WORDS``), ranked by BM25 or embedding cosine, best first to the budget.
- ``clean``: the cleaned HTML, truncated.
- ``htmlrag-bm25``, ``htmlrag-embed``: one pruning stage on 256-word blocks.
- ``htmlrag-two-stage``: embedding stage to twice the budget on 256-word blocks, then the
  generative stage on 128-word blocks, as in the paper.
- ``htmlrag-fused``: one stage of the fused scorer (``scoring.fused``) on blocks sized for
  the budget (``recipe.block_words``).
- ``default``: what ``ask`` and the chat app run with the same models (``recipe.Recipe``
  built by ``pruning.factory.build_recipe`` from the default settings): today, without the
  generative pruner installed, the fused stage alone; with it, both stages.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.events import ignore
from htmlrag_chat.eval.chunks import CHUNK_WORDS, join_chunks, select_chunks, split_chunks
from htmlrag_chat.eval.code import installed_fingerprint
from htmlrag_chat.eval.truncate import truncate
from htmlrag_chat.html.blocks import DEFAULT_MAX_WORDS, BlockTree, Document, build_block_tree
from htmlrag_chat.html.decode import decode_html, looks_binary
from htmlrag_chat.html.prune import prune, token_costs
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.lexical import bm25_scores
from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.pruning.recipe import COARSE_FACTOR, FINE_MAX_WORDS, block_words
from htmlrag_chat.scoring import MULTILINGUAL_EMBED_MODEL as MULTILINGUAL
from htmlrag_chat.scoring.bm25 import BM25Scorer

if TYPE_CHECKING:  # torch loads only when a model method runs
    from htmlrag_chat.scoring.embed import EmbeddingScorer


@dataclass(frozen=True)
class Piece:
    """What a context holds of one page: its pruned HTML (an HTML method) or its text."""

    page: int  # the page's index among the item's pages
    content: str


@dataclass(frozen=True)
class Context:
    """A method's context at one budget: as one string (counted and scored as it is, HTML
    methods by their visible text), and the same per page in reading order."""

    text: str
    pieces: tuple[Piece, ...]

    @classmethod
    def of_document(cls, document: Document, pages: Sequence[PageInput]) -> Context:
        """A pruned document's pages, each its own piece."""
        index = _page_index(pages)
        pieces = tuple(
            Piece(index[page.source], document.page_html(number))
            for number, page in enumerate(document.pages)
        )
        return cls(document.to_html(), pieces)

    @classmethod
    def of_prefix(cls, cut: str, parts: Sequence[tuple[int, str]], separator: str) -> Context:
        """``cut``, a prefix of the ``parts`` (page index, text) joined by ``separator``,
        split back into the pages it holds."""
        pieces, start = [], 0
        for page, text in parts:
            if start >= len(cut):
                break
            if piece := cut[start : start + len(text)]:
                pieces.append(Piece(page, piece))
            start += len(text) + len(separator)
        return cls(cut, tuple(pieces))


Fit = Callable[[int], Context]  # budget -> the context the reader gets


@dataclass(frozen=True)
class Env:
    """What every method runs with."""

    counter: TokenCounter
    embed_model: str
    gen_model: str
    device: str  # resolved: cpu, cuda or mps
    code: str = field(default_factory=installed_fingerprint)  # the code results come from

    def embedder(self) -> EmbeddingScorer:
        """A scorer with an empty in-memory cache: each method pays for its embeddings."""
        from htmlrag_chat.scoring.embed import EmbeddingScorer, MemoryEmbeddingCache

        return EmbeddingScorer(self.embed_model, cache=MemoryEmbeddingCache(), device=self.device)


@dataclass(frozen=True)
class Method:
    name: str
    html: bool  # whether the context is HTML (scored by its visible text) or plain text
    models: tuple[str, ...]  # "embed", "gen": models the method needs
    prepare: Callable[[Env, str, Sequence[PageInput]], Fit]
    settings: tuple[object, ...] = ()  # what else its results depend on (the cache key)
    optional: tuple[str, ...] = ()  # models it uses when they load, and does without


def _plain(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    parts = [(index, text) for index, page in enumerate(pages) if (text := main_text(page))]
    return _truncated(env, parts, "\n\n")


def _truncated(env: Env, parts: list[tuple[int, str]], separator: str) -> Fit:
    """The pages' texts joined, cut to each budget."""
    text = separator.join(text for _, text in parts)
    return lambda budget: Context.of_prefix(truncate(text, budget, env.counter), parts, separator)


def main_text(page: PageInput) -> str:
    """trafilatura's main text of a page, tables included, comments not; '' for none."""
    import trafilatura

    if looks_binary(page.data):
        return ""
    html = decode_html(page.data, page.charset).text
    return trafilatura.extract(html, include_tables=True, include_comments=False) or ""


def _clean(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    document = load_pages(pages).document
    index = _page_index(pages)
    parts = [
        (index[page.source], document.page_html(number))
        for number, page in enumerate(document.pages)
    ]
    return _truncated(env, parts, "\n")  # the separator of ``Document.to_html``


def _page_index(pages: Sequence[PageInput]) -> dict[str, int]:
    """Each page's index by its source (the first, should two share one)."""
    return {page.source: number for number, page in reversed(list(enumerate(pages)))}


def _chunk_bm25(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    chunks = _document_chunks(load_pages(pages).document, pages)
    return _chunk_fit(env, chunks, bm25_scores(query, [text for _, text in chunks]))


def _chunk_embed(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    from htmlrag_chat.scoring.embed import passage_prefix_for, query_instruction_for

    chunks = _document_chunks(load_pages(pages).document, pages)
    if not chunks:
        return _chunk_fit(env, chunks, [])
    embedder = env.embedder()
    question = embedder.embed([query_instruction_for(env.embed_model) + query])[0]
    prefix = passage_prefix_for(env.embed_model)
    scores = (embedder.embed([prefix + chunk for _, chunk in chunks]) @ question).tolist()
    return _chunk_fit(env, chunks, scores)


def _document_chunks(document: Document, pages: Sequence[PageInput]) -> list[tuple[int, str]]:
    """Every page's chunks in reading order, each with its page's index."""
    index = _page_index(pages)
    return [
        (index[page.source], chunk)
        for page, root in zip(document.pages, document.root, strict=True)
        for chunk in split_chunks(visible_text(root, lines=True))
    ]


def _chunk_fit(env: Env, chunks: list[tuple[int, str]], scores: Sequence[float]) -> Fit:
    texts = [text for _, text in chunks]
    costs = env.counter.count_many(texts)

    def fit(budget: int) -> Context:
        chosen = select_chunks(texts, scores, costs, budget, env.counter)
        pieces: list[Piece] = []
        for index in chosen:  # a page's chosen chunks are one piece, joined as in the text
            page, text = chunks[index]
            if pieces and pieces[-1].page == page:
                text = join_chunks([pieces[-1].content, text], [0, 1])
                pieces[-1] = Piece(page, text)
            else:
                pieces.append(Piece(page, text))
        return Context(join_chunks(texts, chosen), tuple(pieces))

    return fit


def _htmlrag_bm25(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    tree = _tree(pages)
    return _prune_fit(env, tree, BM25Scorer().score(query, tree), pages)


def _htmlrag_embed(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    tree = _tree(pages)
    return _prune_fit(env, tree, env.embedder().score(query, tree), pages)


def _tree(pages: Sequence[PageInput]) -> BlockTree:
    return build_block_tree(load_pages(pages).document, DEFAULT_MAX_WORDS)


def _prune_fit(
    env: Env, tree: BlockTree, scores: Sequence[float], pages: Sequence[PageInput]
) -> Fit:
    token_costs(tree, env.counter)  # counted once for all budgets: preparation, not fitting
    return lambda budget: Context.of_document(
        prune(tree, scores, budget, env.counter).document, pages
    )


def _htmlrag_two_stage(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    from htmlrag_chat.scoring.generative import GenerativeScorer

    tree = _tree(pages)
    scores = env.embedder().score(query, tree)
    token_costs(tree, env.counter)
    fine = GenerativeScorer(env.gen_model, device=env.device)

    def fit(budget: int) -> Context:
        coarse = prune(tree, scores, COARSE_FACTOR * budget, env.counter).document
        stages = [Stage(fine, budget, FINE_MAX_WORDS)]
        return _run_stages(env, coarse, query, stages, pages)

    return fit


def _htmlrag_fused(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    from htmlrag_chat.scoring.fused import FusedScorer

    document = load_pages(pages).document

    def fit(budget: int) -> Context:
        stage = Stage(FusedScorer(env.embedder()), budget, block_words(budget))
        return _run_stages(env, document, query, [stage], pages)

    return fit


def _default(env: Env, query: str, pages: Sequence[PageInput]) -> Fit:
    """The recipe ``ask`` builds from its default settings, with this run's models. Block
    sizes, and so every score, depend on the budget: each budget is a cold question of its
    own (an empty embedding cache), as a user's first question would be."""
    from htmlrag_chat.pruning.factory import PruneSettings, build_recipe, plan_alone
    from htmlrag_chat.scoring.embed import MemoryEmbeddingCache

    document = load_pages(pages).document
    plan = plan_alone(
        PruneSettings(embed_model=env.embed_model, gen_model=env.gen_model, device=env.device)
    )

    def fit(budget: int) -> Context:
        recipe = build_recipe(plan, ignore, MemoryEmbeddingCache())
        return _run_stages(env, document, query, recipe.stages(budget), pages)

    return fit


def _run_stages(
    env: Env,
    document: Document,
    query: str,
    stages: Sequence[Stage],
    pages: Sequence[PageInput],
) -> Context:
    pruned = prune_document(document, query, stages, env.counter)[-1].result.document
    return Context.of_document(pruned, pages)


METHODS = {
    method.name: method
    for method in (
        Method("plain", False, (), _plain),
        Method("chunk-bm25", False, (), _chunk_bm25, ("chunk words", CHUNK_WORDS)),
        Method("chunk-embed", False, ("embed",), _chunk_embed, ("chunk words", CHUNK_WORDS)),
        Method("clean", True, (), _clean),
        Method(
            "htmlrag-bm25", True, (), _htmlrag_bm25, ("max words", DEFAULT_MAX_WORDS, "terms", 2)
        ),
        Method("htmlrag-embed", True, ("embed",), _htmlrag_embed, ("max words", DEFAULT_MAX_WORDS)),
        Method(
            "htmlrag-two-stage",
            True,
            ("embed", "gen"),
            _htmlrag_two_stage,
            ("max words", DEFAULT_MAX_WORDS, FINE_MAX_WORDS, "coarse", COARSE_FACTOR),
        ),
        Method("htmlrag-fused", True, ("embed",), _htmlrag_fused),
        # "gen" is not required: without the pruner, ``default`` is the first stage alone.
        Method("default", True, ("embed",), _default, optional=("gen", "multilingual")),
    )
}


def model_names(method: Method, env: Env, missing: Collection[str] = ()) -> dict[str, str]:
    """The models (and device) a method's results depend on; an optional model that is
    ``missing`` here is named as missing, so results made with and without it differ."""
    from htmlrag_chat.pruning.factory import multilingual_model

    multilingual = multilingual_model(env.embed_model) or MULTILINGUAL
    names = {"embed": env.embed_model, "gen": env.gen_model, "multilingual": multilingual}
    used = {kind: names[kind] for kind in method.models}
    used.update({kind: "missing" if kind in missing else names[kind] for kind in method.optional})
    return {**used, "device": env.device} if used else {}


def unavailable_models(kinds: set[str], env: Env) -> dict[str, str]:
    """Why each model kind that cannot be loaded here is missing (loading the rest now)."""
    reasons = {}
    if "embed" in kinds:
        from htmlrag_chat.scoring.embed import load_embedding_model

        try:
            load_embedding_model(env.embed_model, env.device)
        except ModelUnavailable as error:
            reasons["embed"] = f"embedding model {error}"
    if "multilingual" in kinds:
        from htmlrag_chat.pruning.factory import multilingual_model

        if multilingual_model(env.embed_model) is None:
            reasons["multilingual"] = f"{MULTILINGUAL} is not here, or another model was chosen"
    if "gen" in kinds:
        from htmlrag_chat.scoring.generative import GenerativeScorer

        try:
            GenerativeScorer(env.gen_model, device=env.device).context_limit()
        except ModelUnavailable as error:
            reasons["gen"] = f"generative pruner {error}"
    return reasons
