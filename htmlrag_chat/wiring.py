"""From settings to working parts, assembled: the reader, the token counter, the pruning
recipe (built by ``prune_factory``) and the agent around them.

Kept apart from ``ask`` so that the chat app can build the same parts and degrade the same
way, always with a notice: no local reader model under ``--reader auto`` means extractive
answers. Only assembly lives here; what each part is made of is decided below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.device import check_device
from htmlrag_chat.events import EventSink, Notice, stage
from htmlrag_chat.hub import ModelUnavailable, check_obtainable
from htmlrag_chat.prune_factory import PruneSettings, build_recipe, warm_up
from htmlrag_chat.reader import DEFAULT_READER_MODEL, ReaderFailed
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
SERVER_HINT = (
    "for LLM answers, start Ollama, LM Studio, llama.cpp's server or vLLM (found on their "
    "default ports)"
)


def install_hint(model: str) -> str:
    """How to get an LLM reader: a server, or ``models pull`` of a hub id (``owner/name``).
    A server's model name (``llama3.1:8b``) is not one, so ``pull`` is offered for the
    default model instead of a command that would be refused."""
    if is_hub_id(model):
        return f"{SERVER_HINT}, or download the model: htmlrag-chat models pull {model}" + (
            " (Llama needs its licence accepted on the hub)" if "llama" in model.lower() else ""
        )
    serving = "" if model.startswith(("/", ".", "~")) else f" serving {model!r}"
    return (
        f"{SERVER_HINT}{serving}, or download a local reader: htmlrag-chat models pull "
        f"{DEFAULT_READER_MODEL} (Llama needs its licence accepted on the hub)"
    )


def is_hub_id(model: str) -> bool:
    """``owner/name`` as Hugging Face spells a repository (what ``models pull`` takes)."""
    return re.fullmatch(r"[\w.-]+/[\w.-]+", model) is not None and not model.startswith(".")


def build_reader(settings: ReaderSettings, emit: EventSink) -> LLMReader | ExtractiveReader:
    """The reader the settings name; ``auto`` takes a configured server, else a server found
    on this machine's loopback ports (saying which), else a local model already on disk,
    else the extractive reader with a notice saying how to get an LLM."""
    from htmlrag_chat.reader.discover import answering_server, unreachable

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

            down = unreachable(choice.server.base_url) if choice.configured else None
            if down is not None:
                raise ReaderFailed(
                    f"cannot reach the reader server at {safe_url(choice.server.base_url)} "
                    f"({down}): start it, fix --base-url, or answer without it: "
                    "--reader extractive"
                )

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
        message = f"no local reader ({error}): answering extractively; {install_hint(model)}"
        emit(Notice(message, role="reader", instead="extractive answers (no LLM)"))
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


def fit_budget(
    settings: PruneSettings, context: int | None, answer_tokens: int, emit: EventSink
) -> PruneSettings:
    """Lower the budget when the reader's context window cannot hold it with the answer."""
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
        if reader.chat is not None:
            prune = fit_budget(prune, reader.chat.context_tokens, options.reader.max_tokens, emit)
        recipe = build_recipe(prune, emit, embeddings_for(store))
    return Parts(options, reader, counter, recipe, prune)
