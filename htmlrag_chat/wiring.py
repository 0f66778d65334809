"""From settings to working parts, assembled: the reader, the token counter, the pruning
recipe (built by ``prune_factory``) and the agent around them.

Kept apart from ``ask`` so that the chat app can build the same parts and degrade the same
way, always with a notice: no local reader model under ``--reader auto`` means extractive
answers. Only assembly lives here; what each part is made of is decided below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.device import check_device
from htmlrag_chat.events import EventSink, Notice, stage
from htmlrag_chat.hub import ModelUnavailable, check_obtainable
from htmlrag_chat.prune_factory import (
    BUDGET,
    CPU_BUDGET,
    PruneSettings,
    build_recipe,
    warm_up,
)
from htmlrag_chat.reader import ChatModel, ReaderFailed
from htmlrag_chat.reader.choice import (
    ReaderPlan,
    Surroundings,
    look_around,
    no_llm_hint,
    plan_reader,
)
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.recipe import Recipe
from htmlrag_chat.safety import safe_url
from htmlrag_chat.settings.sources import Resolved
from htmlrag_chat.settings.tree import default
from htmlrag_chat.tokens import HFTokenCounter, LoadedCounter, load_token_counter
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.loop import Agent
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
            emit(_no_llm(plan.why))
        return ExtractiveReader()
    if plan.kind == "server":
        from htmlrag_chat.reader.openai import OpenAIChat

        assert plan.server is not None
        if plan.configured:
            from htmlrag_chat.reader.discover import unreachable

            down = unreachable(plan.server.base_url)
            if down is not None:  # said before any search or pruning, not after them
                raise ReaderFailed(
                    f"cannot reach the reader server at {safe_url(plan.server.base_url)} "
                    f"({down}): start it, fix --base-url, or answer without it: "
                    "--reader extractive"
                )
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
        hint = no_llm_hint(settings.model)
        emit(_no_llm(f"no local reader ({error}): answering extractively; {hint}"))
        return ExtractiveReader()
    if auto:
        emit(Notice(plan.why))
    return LLMReader(chat, "local", settings.max_tokens)


def _no_llm(message: str) -> Notice:
    """The note that ``auto`` answers without an LLM, grouped with the other missing models."""
    return Notice(message, role="reader", instead="extractive answers (no LLM)")


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


@dataclass(frozen=True)
class AgentOptions:
    """Everything ``ask`` and the chat app take from the command line to build an agent."""

    reader: ReaderSettings = field(default_factory=ReaderSettings)
    prune: PruneSettings = field(default_factory=PruneSettings)
    rounds: int = default("research.rounds")
    pages: int = default("research.pages")
    max_queries: int = default("research.max_queries")
    replay: bool = False
    refresh: float | None = None  # --refresh: redo cached searches and pages older than this
    deadline: float | None = default("web.deadline")  # seconds after the first page
    search: SearchSettings = field(default_factory=SearchSettings)

    @classmethod
    def of(
        cls, settings: Resolved, replay: bool = False, refresh: float | None = None
    ) -> AgentOptions:
        """The options the settings in effect give, each section to its dataclass."""
        return cls(
            reader=ReaderSettings(**settings.section("reader")),
            prune=PruneSettings.of(settings),
            search=SearchSettings(**settings.section("search")),
            replay=replay,
            refresh=refresh,
            **settings.section("research"),
            **settings.section("web"),
        )


def build_agent(options: AgentOptions, store: Store, emit: EventSink) -> Agent:
    """Load the parts (slow: models load here, so the chat app calls this in a thread) and
    put the agent together on ``store``."""
    return build_parts(options, store, emit).agent(store, emit)


@dataclass(frozen=True)
class Parts:
    """What loading builds once per process: the reader, the token counter and the pruning
    recipe. An agent over them is cheap, so a server that answers several calls at once
    builds one per call, each with its own progress sink and budget, on one model load."""

    options: AgentOptions
    reader: LLMReader | ExtractiveReader
    counter: LoadedCounter
    recipe: Recipe
    prune: PruneSettings  # the options' pruning, its budget fitted to the reader's context

    def agent(
        self, store: Store, emit: EventSink, budget: int | None = None, pages: int | None = None
    ) -> Agent:
        """An agent on ``store`` pruning to ``budget`` tokens (default: the options') and
        reading ``pages`` pages a round (default: the options')."""
        from htmlrag_chat.agent.loop import Agent
        from htmlrag_chat.recorder import WebRecorder
        from htmlrag_chat.web.search import WebSearcher

        options = self.options
        web = WebRecorder(
            store, WebSearcher(options.search, emit), replay=options.replay, max_age=options.refresh
        )
        return Agent(
            web=web,
            reader=self.reader,
            stages=self.recipe.stages(budget or self.prune.budget),
            counter=self.counter.counter,
            emit=emit,
            rounds=options.rounds,
            max_pages=pages or options.pages,
            max_queries=options.max_queries,
            deadline=options.deadline,
        )


def build_parts(options: AgentOptions, store: Store, emit: EventSink) -> Parts:
    """Load the reader, the token counter and the pruning stages, with a notice for each
    fallback taken."""
    from htmlrag_chat.store.embeddings import embeddings_for

    with stage(emit, "load") as counts:
        counts["warming"] = int(warm_up(options.prune))
        reader = build_reader(options.reader, emit)
        counter = reader_counter(reader, options.prune.tokenizer)
        if counter.notice:
            emit(Notice(counter.notice, role="tokenizer", instead="approximate token counts"))
        prune = options.prune
        if prune.budget is None:
            prune = replace(prune, budget=default_budget(reader))
        if reader.chat is not None:
            prune = fit_budget(prune, reader.chat.context_tokens, options.reader.max_tokens, emit)
        recipe = build_recipe(prune, emit, embeddings_for(store))
    return Parts(options, reader, counter, recipe, prune)
