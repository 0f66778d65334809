"""From settings to working parts: the reader, the pruning stages and the token counter.

Kept apart from ``ask`` so that the chat app can build the same parts and degrade the same
way, always with a notice: no local reader model under ``--reader auto`` means extractive
answers; no generative pruner means the embedding stage alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.events import EventSink, Notice
from htmlrag_chat.html.blocks import DEFAULT_MAX_WORDS
from htmlrag_chat.hub import ModelUnavailable
from htmlrag_chat.pipeline import Stage
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, BlockScorer
from htmlrag_chat.tokens import HFTokenCounter, LoadedCounter, load_token_counter
from htmlrag_chat.web.search import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.scoring.embed import EmbeddingCache
    from htmlrag_chat.store.db import Store

FINE_MAX_WORDS = 128  # the generative stage's granularity in the paper
PRUNERS = ("two-stage", "embed", "bm25")
PROMPT_RESERVE = 1024  # tokens of instructions, titles, URLs and history around the sources
INSTALL_HINT = (
    "for LLM answers, download a model (huggingface-cli download {model}; Llama needs its "
    "license accepted on the hub), pass --model PATH, or use a server: --reader openai "
    "--base-url http://localhost:11434/v1 --model llama3.1:8b (Ollama)"
)


def build_reader(settings: ReaderSettings, emit: EventSink) -> LLMReader | ExtractiveReader:
    """The reader the settings name; ``auto`` takes a configured server, else a local model
    already on disk, else the extractive reader with a notice saying how to get an LLM."""
    from htmlrag_chat.reader.local import LocalChat
    from htmlrag_chat.reader.openai import OpenAIChat

    kind = settings.reader
    if kind == "auto":
        kind = "openai" if settings.base_url else "local"
        if kind == "local":
            chat = LocalChat(settings.model or DEFAULT_READER_MODEL, settings.device, True)
            try:
                chat.load()
            except ModelUnavailable as error:
                hint = INSTALL_HINT.format(model=chat.model_name)
                emit(Notice(f"no local reader ({error}): answering extractively; {hint}"))
                return ExtractiveReader()
            return LLMReader(chat, "local", settings.max_tokens)
    if kind == "extractive":
        return ExtractiveReader()
    if kind == "openai":
        if not settings.base_url:
            raise ModelUnavailable(
                "--reader openai needs the server's URL: --base-url or base_url in the "
                "[reader] table of the config file"
            )
        chat = OpenAIChat(
            base_url=settings.base_url,
            model=settings.model or DEFAULT_READER_MODEL,
            api_key=settings.api_key,
            context_tokens=settings.context_tokens,
        )
        return LLMReader(chat, "openai", settings.max_tokens)
    chat = LocalChat(settings.model or DEFAULT_READER_MODEL, settings.device)
    chat.load()
    return LLMReader(chat, "local", settings.max_tokens)


def reader_counter(reader: LLMReader | ExtractiveReader, tokenizer: str | None) -> LoadedCounter:
    """Budgets count the reader's own tokens when it is a local model; otherwise those of
    ``--tokenizer`` (default Llama-3's, else the approximation with a notice)."""
    from htmlrag_chat.reader.local import LocalChat

    if isinstance(reader, LLMReader) and isinstance(reader.chat, LocalChat) and not tokenizer:
        _, loaded = reader.chat.load()
        return LoadedCounter(HFTokenCounter(loaded, reader.chat.model_name), None)
    return load_token_counter(tokenizer)


@dataclass(frozen=True)
class PruneSettings:
    pruner: str = "two-stage"
    budget: int = 4096  # tokens of pruned HTML the reader gets (the paper's final budget)
    coarse_budget: int | None = None  # two-stage: the embedding stage's (default 2x budget)
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


def build_stages(
    settings: PruneSettings, emit: EventSink, cache: EmbeddingCache | None = None
) -> list[Stage]:
    """The pruning stages; ``two-stage`` falls back to the embedding stage alone, with a
    notice, when the generative pruner cannot be loaded."""
    if settings.pruner == "bm25":
        from htmlrag_chat.scoring.bm25 import BM25Scorer

        return [Stage(BM25Scorer(), settings.budget)]
    embed = embedding_scorer(settings.embed_model, settings.device, cache)
    if settings.pruner == "embed":
        return [Stage(embed, settings.budget, DEFAULT_MAX_WORDS)]
    from htmlrag_chat.scoring.generative import GenerativeScorer

    gen = GenerativeScorer(settings.gen_model, device=settings.device)
    try:
        gen.context_limit()  # loads the model
    except ModelUnavailable as error:
        emit(Notice(f"generative pruner {error}: pruning with the embedding stage only"))
        return [Stage(embed, settings.budget, DEFAULT_MAX_WORDS)]
    coarse = settings.coarse_budget or 2 * settings.budget
    return [
        Stage(embed, coarse, DEFAULT_MAX_WORDS),
        Stage(gen, settings.budget, FINE_MAX_WORDS),
    ]


def embedding_scorer(model: str, device: str, cache: EmbeddingCache | None) -> BlockScorer:
    """Stage 1's scorer, its block embeddings kept in ``cache`` (else in memory)."""
    from htmlrag_chat.scoring.embed import EmbeddingScorer

    scorer = EmbeddingScorer(model, device=device)
    if cache is not None:
        scorer.cache = cache
    return scorer


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
    search: SearchSettings = field(default_factory=SearchSettings)


def build_agent(options: AgentOptions, store: Store, emit: EventSink) -> Agent:
    """Load the reader, the token counter and the pruning stages (slow: models load here, so
    the chat app calls this in a thread) and put the agent together on ``store``."""
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.sources import Sources
    from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings

    reader = build_reader(options.reader, emit)
    counter = reader_counter(reader, options.tokenizer)
    if counter.notice:
        emit(Notice(counter.notice))
    prune = options.prune
    if reader.chat is not None:
        prune = fit_budget(prune, reader.chat.context_tokens, options.reader.max_tokens, emit)
    cache = ThreadLocalEmbeddings(store.path, readonly=store.readonly)
    return Agent(
        web=Sources(
            store, replay=options.replay, max_age=options.refresh, search_settings=options.search
        ),
        reader=reader,
        stages=build_stages(prune, emit, cache),
        counter=counter.counter,
        emit=emit,
        rounds=options.rounds,
        max_pages=options.pages,
    )
