"""From pruning settings to loaded scorers: the recipe ``--pruner`` names, with its fallback.

``ask``, the chat app, ``prune`` and ``eval``'s ``default`` method all build their stages
here, so they load the same models and degrade the same way, always with a notice: no
generative pruner means the fused first stage alone. It sits below the reader and the
agent (it knows scorers, not readers), so the evaluation can use it without the reader
stack; ``wiring`` only assembles its recipe with the reader and the web.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING

from htmlrag_chat.device import pick_device
from htmlrag_chat.errors import UserError
from htmlrag_chat.events import EventSink, Notice
from htmlrag_chat.hub import ModelUnavailable, cached_snapshot, check_obtainable
from htmlrag_chat.recipe import Recipe
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, MULTILINGUAL_EMBED_MODEL, BlockScorer
from htmlrag_chat.settings.tree import default

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.scoring.embed import EmbeddingCache, EmbeddingScorer
    from htmlrag_chat.settings.sources import Resolved


CPU_BUDGET = 2048  # tokens, for a reader that prefills on this machine's CPU
BUDGET = 4096  # for a server or a GPU (the paper's final budget), and without a reader


@dataclass(frozen=True)
class PruneSettings:
    """The ``[prune]`` section of the settings tree, and the device models run on."""

    pruner: str = default("prune.pruner")  # one of ``settings.tree.PRUNERS``
    budget: int | None = default("prune.budget")  # None: by the reader (wiring.default_budget)
    coarse_budget: int | None = default("prune.coarse_budget")  # two-stage: default 2x budget
    max_words: int | None = default("prune.max_words")  # last stage's block size
    coarse_max_words: int | None = default("prune.coarse_max_words")  # first stage's
    embed_model: str = default("prune.embed_model")
    gen_model: str = default("prune.gen_model")
    tokenizer: str | None = default("prune.tokenizer")  # None: the reader's, else Llama-3's
    device: str = default("reader.device")

    @classmethod
    def of(cls, settings: Resolved) -> PruneSettings:
        return cls(**settings.section("prune"), device=settings["reader.device"])


def build_recipe(
    settings: PruneSettings, emit: EventSink, cache: EmbeddingCache | None = None
) -> Recipe:
    """The scorers ``settings.pruner`` names, loaded; ``two-stage`` falls back to the fused
    first stage alone, with a notice, when the generative pruner cannot be loaded."""
    from htmlrag_chat.scoring.bm25 import BM25Scorer

    sizes = {
        "coarse_budget": settings.coarse_budget,
        "max_words": settings.max_words,
        "coarse_max_words": settings.coarse_max_words,
    }
    if settings.pruner == "bm25":
        return Recipe(BM25Scorer(), **sizes)
    if settings.pruner == "gen":
        return Recipe(generative_scorer(settings), **sizes)
    if settings.pruner == "embed":
        return Recipe(embedding_scorer(settings.embed_model, settings.device, cache), **sizes)
    from htmlrag_chat.scoring.fused import FusedScorer

    try:
        embed = embedding_scorer(settings.embed_model, settings.device, cache)
    except ModelUnavailable as error:
        message = f"embedding model {error}: the first stage ranks by BM25 and main text alone"
        emit(Notice(message, role="embedding", instead="BM25 and main text (no embeddings)"))
        embed = None
    english_only = settings.embed_model == DEFAULT_EMBED_MODEL
    multilingual = multilingual_scorer(settings, cache)
    fused = FusedScorer(embed, multilingual=multilingual, english_only=english_only)
    if settings.pruner == "fused":
        return Recipe(fused, **sizes)
    try:
        gen = generative_scorer(settings)
    except ModelUnavailable as error:
        message = f"generative pruner {error}: pruning with the first stage only"
        emit(Notice(message, role="pruner", instead="the first pruning stage alone"))
        return Recipe(fused, max_words=settings.max_words)
    return Recipe(fused, gen, **sizes)


def generative_scorer(settings: PruneSettings) -> BlockScorer:
    """Stage 2's scorer, its model loaded now (ModelUnavailable when it cannot be, found
    before torch is imported when the model is not here at all)."""
    check_obtainable(settings.gen_model)
    from htmlrag_chat.scoring.generative import GenerativeScorer

    gen = GenerativeScorer(settings.gen_model, device=settings.device)
    gen.context_limit()  # loads the model
    return gen


def embedding_scorer(model: str, device: str, cache: EmbeddingCache | None) -> EmbeddingScorer:
    """Stage 1's embedding model, its block embeddings kept in ``cache`` (else in memory);
    ``ModelUnavailable`` when it cannot be loaded here (found before anything loads)."""
    from htmlrag_chat.scoring.embed import EmbeddingScorer, check_embedding

    check_embedding(model, pick_device(device))
    scorer = EmbeddingScorer(model, device=device)
    if cache is not None:
        scorer.cache = cache
    return scorer


def multilingual_scorer(
    settings: PruneSettings, cache: EmbeddingCache | None
) -> EmbeddingScorer | None:
    """The multilingual embedding model for questions not in English, when the default
    English one was kept (a model the user chose is used for every question) and the
    multilingual one is on disk (``models pull embedding --multilingual``); else None."""
    if not multilingual_available(settings.embed_model):
        return None
    try:
        return embedding_scorer(MULTILINGUAL_EMBED_MODEL, settings.device, cache)
    except ModelUnavailable:  # on disk but not usable here: the English rule stands
        return None


def multilingual_available(embed_model: str) -> bool:
    """Whether ``multilingual_scorer`` would give a model for this embedding setting."""
    if embed_model != DEFAULT_EMBED_MODEL:
        return False
    return cached_snapshot(MULTILINGUAL_EMBED_MODEL) is not None


def warm_up(settings: PruneSettings) -> bool:
    """Load the embedding model of the pruner ``settings`` name in a thread, so that its
    weights load while the reader is set up and the question is searched and fetched;
    whether there is one. A model that fails to load here fails again, with its message,
    where it is used.

    A model that runs in numpy (``scoring.bert``) imports no torch. For one that needs
    sentence-transformers, this returns once the thread has imported it: two threads
    importing transformers at once can each find the other's half-initialised modules
    ("cannot import name ..."), so the caller imports nothing of them before that."""
    if settings.pruner not in ("two-stage", "fused", "embed"):
        return False
    from htmlrag_chat.scoring.embed import EmbeddingScorer, numpy_layout

    model = EmbeddingScorer(settings.embed_model, device=settings.device)
    try:
        in_numpy = numpy_layout(settings.embed_model, pick_device(settings.device)) is not None
    except UserError:  # a device that cannot be used: said where the model is used
        in_numpy = False
    imported = threading.Event()

    def load() -> None:
        try:
            with suppress(Exception):
                if not in_numpy:
                    import sentence_transformers  # noqa: F401  (torch and transformers too)
                import trafilatura  # noqa: F401  (the fused stage's main-content opinion)
        finally:
            imported.set()
        with suppress(Exception):
            model.load()

    threading.Thread(target=load, name="warm-up", daemon=True).start()
    if not in_numpy:
        imported.wait()
    return True
