"""From settings to working parts: the reader, the pruning stages and the token counter.

Kept apart from ``ask`` so that the chat app can build the same parts and degrade the same
way, always with a notice: no local reader model under ``--reader auto`` means extractive
answers; no generative pruner means the fused first stage alone.
"""

from __future__ import annotations

import threading
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from htmlrag_chat.config import DEFAULT_DEADLINE, ReaderSettings
from htmlrag_chat.device import check_device
from htmlrag_chat.errors import UserError
from htmlrag_chat.events import EventSink, Notice, stage
from htmlrag_chat.hub import ModelUnavailable, cached_snapshot, check_obtainable
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.recipe import DEFAULT_PRUNER, Recipe
from htmlrag_chat.scoring import (
    DEFAULT_EMBED_MODEL,
    DEFAULT_GEN_MODEL,
    MULTILINGUAL_EMBED_MODEL,
    BlockScorer,
)
from htmlrag_chat.tokens import HFTokenCounter, LoadedCounter, load_token_counter
from htmlrag_chat.web.search import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.scoring.embed import EmbeddingCache, EmbeddingScorer
    from htmlrag_chat.store.db import Store

PROMPT_RESERVE = 1024  # tokens of instructions, titles, URLs and history around the sources
INSTALL_HINT = (
    "for LLM answers, start Ollama, LM Studio, llama.cpp's server or vLLM (found on their "
    "default ports), or download the model: htmlrag-chat models pull {model} (Llama needs "
    "its licence accepted on the hub)"
)


def build_reader(settings: ReaderSettings, emit: EventSink) -> LLMReader | ExtractiveReader:
    """The reader the settings name; ``auto`` takes a configured server, else a server found
    on this machine's loopback ports (saying which), else a local model already on disk,
    else the extractive reader with a notice saying how to get an LLM."""
    from htmlrag_chat.reader.discover import answering_server

    kind = settings.reader
    if kind == "extractive":
        return ExtractiveReader()
    if kind == "openai" and not settings.base_url:
        raise ModelUnavailable(
            "--reader openai needs the server's URL: --base-url or base_url in the "
            "[reader] table of the config file"
        )
    if kind in ("auto", "openai"):
        ports = settings.probe_ports if kind == "auto" else ()
        choice = answering_server(settings.base_url, settings.model, settings.api_key, ports)
        if choice is not None:
            from htmlrag_chat.reader.openai import OpenAIChat

            if kind == "auto":
                emit(Notice(choice.line()))
            chat = OpenAIChat(
                base_url=choice.server.base_url,
                model=choice.model,
                api_key=settings.api_key if choice.configured else None,
                context_tokens=settings.context_tokens,
            )
            return LLMReader(chat, "openai", settings.max_tokens)
    if settings.device and settings.device != "auto":
        check_device(settings.device)  # a usage error, whether or not the model is here
    local_only = kind == "auto"
    model = settings.model or DEFAULT_READER_MODEL
    try:
        check_obtainable(model, local_only)  # a model that is not here costs no torch import
        from htmlrag_chat.reader.local import LocalChat

        chat = LocalChat(model, settings.device, local_only)
        chat.load()
    except ModelUnavailable as error:
        if not local_only:
            raise
        hint = INSTALL_HINT.format(model=model)
        emit(Notice(f"no local reader ({error}): answering extractively; {hint}"))
        return ExtractiveReader()
    return LLMReader(chat, "local", settings.max_tokens)


def reader_counter(reader: LLMReader | ExtractiveReader, tokenizer: str | None) -> LoadedCounter:
    """Budgets count the reader's own tokens when it is a local model; otherwise those of
    ``--tokenizer`` (default Llama-3's, else the approximation with a notice)."""
    if isinstance(reader, LLMReader) and reader.kind == "local" and not tokenizer:
        from htmlrag_chat.reader.local import LocalChat  # imported with the reader already

        if isinstance(reader.chat, LocalChat):
            _, loaded = reader.chat.load()
            return LoadedCounter(HFTokenCounter(loaded, reader.chat.model_name), None)
    return load_token_counter(tokenizer)


@dataclass(frozen=True)
class PruneSettings:
    pruner: str = DEFAULT_PRUNER  # one of ``recipe.PRUNERS``
    budget: int = 4096  # tokens of pruned HTML the reader gets (the paper's final budget)
    coarse_budget: int | None = None  # two-stage: the first stage's (default 2x budget)
    max_words: int | None = None  # block size of the last stage (default: from the budget)
    coarse_max_words: int | None = None  # two-stage: block size of the first stage
    embed_model: str = DEFAULT_EMBED_MODEL
    gen_model: str = DEFAULT_GEN_MODEL
    device: str = "auto"


def fit_budget(
    settings: PruneSettings, context: int | None, answer_tokens: int, emit: EventSink
) -> PruneSettings:
    """Lower the budget when the reader's context window cannot hold it with the answer."""
    if context is None or settings.budget + answer_tokens + PROMPT_RESERVE <= context:
        return settings
    budget = max(context - answer_tokens - PROMPT_RESERVE, 256)
    emit(Notice(f"the reader's context of {context} tokens fits a budget of {budget}"))
    return replace(settings, budget=budget, coarse_budget=None)


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
    embed = embedding_scorer(settings.embed_model, settings.device, cache)
    if settings.pruner == "embed":
        return Recipe(embed, **sizes)
    from htmlrag_chat.scoring.fused import FusedScorer

    english_only = settings.embed_model == DEFAULT_EMBED_MODEL
    multilingual = multilingual_scorer(settings, cache)
    fused = FusedScorer(embed, multilingual=multilingual, english_only=english_only)
    if settings.pruner == "fused":
        return Recipe(fused, **sizes)
    try:
        gen = generative_scorer(settings)
    except ModelUnavailable as error:
        emit(Notice(f"generative pruner {error}: pruning with the first stage only"))
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
    """Stage 1's embedding model, its block embeddings kept in ``cache`` (else in memory)."""
    from htmlrag_chat.scoring.embed import EmbeddingScorer

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
    return embedding_scorer(MULTILINGUAL_EMBED_MODEL, settings.device, cache)


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
    from htmlrag_chat.device import pick_device
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


@dataclass(frozen=True)
class AgentOptions:
    """Everything ``ask`` and the chat app take from the command line to build an agent."""

    reader: ReaderSettings = field(default_factory=ReaderSettings)
    prune: PruneSettings = field(default_factory=PruneSettings)
    tokenizer: str | None = None
    rounds: int = 2
    pages: int = 10
    replay: bool = False
    refresh: float | None = None  # --refresh: redo cached searches and pages older than this
    deadline: float | None = DEFAULT_DEADLINE  # seconds after the first page to wait for more
    search: SearchSettings = field(default_factory=SearchSettings)


def build_agent(options: AgentOptions, store: Store, emit: EventSink) -> Agent:
    """Load the reader, the token counter and the pruning stages (slow: models load here, so
    the chat app calls this in a thread) and put the agent together on ``store``."""
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.recorder import WebRecorder
    from htmlrag_chat.store.embeddings import embeddings_for

    with stage(emit, "load") as counts:
        counts["warming"] = int(warm_up(options.prune))
        reader = build_reader(options.reader, emit)
        counter = reader_counter(reader, options.tokenizer)
        if counter.notice:
            emit(Notice(counter.notice))
        prune = options.prune
        if reader.chat is not None:
            prune = fit_budget(prune, reader.chat.context_tokens, options.reader.max_tokens, emit)
        recipe = build_recipe(prune, emit, embeddings_for(store))
    return Agent(
        web=WebRecorder(
            store, replay=options.replay, max_age=options.refresh, search_settings=options.search
        ),
        reader=reader,
        stages=recipe.stages(prune.budget),
        counter=counter.counter,
        emit=emit,
        rounds=options.rounds,
        max_pages=options.pages,
        deadline=options.deadline,
    )
