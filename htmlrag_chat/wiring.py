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
from htmlrag_chat.hub import ModelUnavailable, check_obtainable
from htmlrag_chat.reader import ChatModel
from htmlrag_chat.reader.choice import (
    ReaderPlan,
    Surroundings,
    look_around,
    no_llm_hint,
    plan_reader,
)
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.recipe import DEFAULT_PRUNER, Recipe
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, BlockScorer
from htmlrag_chat.tokens import HFTokenCounter, LoadedCounter, load_token_counter
from htmlrag_chat.web.search import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.scoring.embed import EmbeddingCache, EmbeddingScorer
    from htmlrag_chat.store.db import Store

PROMPT_RESERVE = 1024  # tokens of instructions, titles, URLs and history around the sources


def build_reader(
    settings: ReaderSettings, emit: EventSink, around: Surroundings | None = None
) -> LLMReader | ExtractiveReader:
    """The reader ``reader.choice.plan_reader`` picks, loaded. Under ``auto`` one line says
    which server or model answers, and a model that fails to load means the extractive
    reader with a notice; a reader named on purpose that cannot be built is an error."""
    plan = plan_reader(settings, around or look_around(settings))
    auto = settings.reader == "auto"
    if plan.problem:
        raise ModelUnavailable(plan.problem)
    if plan.kind == "extractive":
        if auto:
            emit(Notice(plan.why))
        return ExtractiveReader()
    if plan.kind == "server":
        from htmlrag_chat.reader.openai import OpenAIChat

        assert plan.server is not None
        if auto:
            emit(Notice(plan.why))
        from htmlrag_chat.reader.window import context_window

        api_key = settings.api_key if plan.configured else None
        window = settings.context_tokens or context_window(
            plan.server.name, plan.server.base_url, plan.model, api_key
        )
        chat: ChatModel = OpenAIChat(
            base_url=plan.server.base_url,
            model=plan.model,
            api_key=api_key,
            context_tokens=window,
            llama_cpp=plan.server.name == "llama.cpp",
            warn=lambda message: emit(Notice(message)),
        )
        return LLMReader(chat, "openai", settings.max_tokens)
    if settings.device and settings.device != "auto":
        check_device(settings.device)  # a usage error, whether or not the model is here
    try:
        chat = _local_chat(plan, settings)
    except ModelUnavailable as error:
        if not auto:
            raise
        emit(
            Notice(
                f"no local reader ({error}): answering extractively; {no_llm_hint(settings.model)}"
            )
        )
        return ExtractiveReader()
    if auto:
        emit(Notice(plan.why))
    return LLMReader(chat, "local", settings.max_tokens)


def _local_chat(plan: ReaderPlan, settings: ReaderSettings) -> ChatModel:
    """The model of a ``gguf`` or ``transformers`` plan, loaded (ModelUnavailable when it
    cannot be; a transformers model that is not here costs no torch import)."""
    if plan.kind == "gguf":
        from htmlrag_chat.reader.gguf import GGUFChat

        gguf = GGUFChat(plan.model, context=settings.context_tokens)
        gguf.load()
        return gguf
    check_obtainable(plan.model, plan.local_only)
    from htmlrag_chat.reader.local import LocalChat

    local = LocalChat(plan.model, settings.device, plan.local_only)
    local.load()
    return local


def reader_counter(reader: LLMReader | ExtractiveReader, tokenizer: str | None) -> LoadedCounter:
    """Budgets count the reader's own tokens: a GGUF's vocabulary or a transformers
    tokenizer here, the server's tokenize endpoint (llama.cpp) there; otherwise those of
    ``--tokenizer`` (default Llama-3's, else the approximation with a notice)."""
    if isinstance(reader, LLMReader) and reader.kind == "local" and not tokenizer:
        from htmlrag_chat.reader.gguf import GGUFChat, GGUFTokenCounter
        from htmlrag_chat.reader.local import LocalChat  # imported with the reader already

        if isinstance(reader.chat, GGUFChat):
            return LoadedCounter(GGUFTokenCounter(reader.chat.load(), reader.chat.name), None)
        if isinstance(reader.chat, LocalChat):
            _, loaded = reader.chat.load()
            return LoadedCounter(HFTokenCounter(loaded, reader.chat.model_name), None)
    from htmlrag_chat.reader.openai import OpenAIChat

    chat = reader.chat if isinstance(reader, LLMReader) else None
    if not isinstance(chat, OpenAIChat):
        return load_token_counter(tokenizer)
    from htmlrag_chat.reader.window import ServerTokenCounter, token_route

    route = None if tokenizer else token_route(chat.base_url)
    if route is not None:
        loaded = LoadedCounter(ServerTokenCounter(chat.base_url, chat.model, route), None)
    else:
        loaded = load_token_counter(tokenizer)
    chat.counter = loaded.counter  # what the server should read, to tell when it read less
    return loaded


@dataclass(frozen=True)
class PruneSettings:
    pruner: str = DEFAULT_PRUNER  # one of ``recipe.PRUNERS``
    budget: int | None = None  # tokens of pruned HTML the reader gets (None: default_budget)
    coarse_budget: int | None = None  # two-stage: the first stage's (default 2x budget)
    max_words: int | None = None  # block size of the last stage (default: from the budget)
    coarse_max_words: int | None = None  # two-stage: block size of the first stage
    embed_model: str = DEFAULT_EMBED_MODEL
    gen_model: str = DEFAULT_GEN_MODEL
    device: str = "auto"


CPU_BUDGET = 2048  # a reader that prefills on this machine's CPU
BUDGET = 4096  # a server or a GPU (the paper's final budget)


def default_budget(reader: LLMReader | ExtractiveReader) -> int:
    """The budget when none is given, by where the reader prefills. On a CPU the prefill is
    the wait (bench/reader.py: SmolLM2 reads about 60 tokens a second on 2 shared cores, so
    an 8B model far fewer), and on the dev set pruning to 2048 tokens keeps the answer as
    often as 4096 (40/40, docs/evaluation.md): half the wait for the same sources. A server
    or a GPU reads 4096 tokens in a second or two, and more context is never worse there."""
    chat = reader.chat if isinstance(reader, LLMReader) else None
    if chat is None or reader.kind != "local":
        return BUDGET
    from htmlrag_chat.reader.gguf import GGUFChat
    from htmlrag_chat.reader.local import LocalChat

    if isinstance(chat, GGUFChat):
        return BUDGET if chat.on_gpu else CPU_BUDGET
    if isinstance(chat, LocalChat):
        model, _ = chat.load()  # loaded already
        return CPU_BUDGET if model.device.type == "cpu" else BUDGET
    return BUDGET


def fit_budget(
    settings: PruneSettings, context: int | None, answer_tokens: int, emit: EventSink
) -> PruneSettings:
    """Lower the budget when the reader's context window cannot hold it with the answer."""
    assert settings.budget is not None
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

    fused = FusedScorer(embed)
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
        if prune.budget is None:
            prune = replace(prune, budget=default_budget(reader))
        if reader.chat is not None:
            prune = fit_budget(prune, reader.chat.context_tokens, options.reader.max_tokens, emit)
        recipe = build_recipe(prune, emit, embeddings_for(store))
    return Agent(
        web=WebRecorder(
            store, replay=options.replay, max_age=options.refresh, search_settings=options.search
        ),
        reader=reader,
        stages=recipe.stages(prune.budget or BUDGET),
        counter=counter.counter,
        emit=emit,
        rounds=options.rounds,
        max_pages=options.pages,
        deadline=options.deadline,
    )
