"""From settings to working parts: resolved once into a ``Plan``, then loaded.

``resolve`` decides everything that does not need a model loaded: the device models run on
(a device named that cannot be used is an error here, before any search), the reader that
answers (``reader/backends.py``: the servers asked, the model files found) and the pruning
settings on that device. ``build_parts`` loads from the plan alone: the reader, through its
backend; the token counter and the default budget, which its backend says; the pruning
recipe (``prune_factory``). ``models`` and ``config`` show the same plan (``inventory.py``).

Kept apart from ``ask`` so that the chat app and the MCP server build the same parts and
degrade the same way, always with a notice: no local reader model found under ``--reader
auto`` means extractive answers, while a model the user named that cannot be used is an
error. Only assembly lives here; what each part is made of is decided below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.counting import TokenCounter
from htmlrag_chat.device import pick_device
from htmlrag_chat.events import EventSink, Notice, stage
from htmlrag_chat.prune_factory import PruneSettings, build_recipe, warm_up
from htmlrag_chat.reader.backend import ReaderPlan
from htmlrag_chat.reader.backends import backend_of, load_reader, plan_reader
from htmlrag_chat.reader.choice import Surroundings, look_around
from htmlrag_chat.recipe import Recipe
from htmlrag_chat.settings.sources import Resolved
from htmlrag_chat.settings.tree import default
from htmlrag_chat.tokens import load_token_counter
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.reader.backend import Reader
    from htmlrag_chat.store.db import Store

PROMPT_RESERVE = 1024  # tokens of instructions, titles, URLs and history around the sources


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


@dataclass(frozen=True)
class Plan:
    """The settings resolved once, before anything loads; everything after reads this."""

    options: AgentOptions
    around: Surroundings  # the servers and reader models found
    reader: ReaderPlan  # its settings carry the device
    prune: PruneSettings  # on the same device


def resolve(
    options: AgentOptions, device: str | None = None, cache_dir: Path | None = None
) -> Plan:
    """``options`` resolved: the device (``device`` when the caller knows it already:
    ``models`` guesses it without importing torch), the reader plan (the servers asked
    within a fraction of a second, the model files looked up in ``cache_dir``, default the
    Hugging Face cache), the pruning on that device."""
    device = device or pick_device(options.reader.device)
    reader = replace(options.reader, device=device)
    around = look_around(reader, cache_dir)
    return Plan(options, around, plan_reader(reader, around), replace(options.prune, device=device))


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
    reader: Reader
    counter: TokenCounter
    recipe: Recipe
    prune: PruneSettings  # the plan's pruning, its budget the reader's, fitted to its window

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
            counter=self.counter,
            emit=emit,
            rounds=options.rounds,
            max_pages=pages or options.pages,
            max_queries=options.max_queries,
            deadline=options.deadline,
        )


def build_parts(options: AgentOptions, store: Store, emit: EventSink) -> Parts:
    """Resolve ``options``, then load the reader, the token counter and the pruning stages,
    with a notice for each fallback taken."""
    from htmlrag_chat.store.embeddings import embeddings_for

    with stage(emit, "load") as counts:
        plan = resolve(options)
        counts["warming"] = int(warm_up(plan.prune))
        reader = load_reader(plan.reader, emit)
        counter = reader_counter(reader, plan.prune.tokenizer, emit)
        prune = plan.prune
        if prune.budget is None:
            prune = replace(prune, budget=backend_of(reader).default_budget(reader))
        if reader.chat is not None:
            answer = plan.reader.settings.max_tokens
            prune = fit_budget(prune, reader.chat.context_tokens, answer, emit)
        recipe = build_recipe(prune, emit, embeddings_for(store))
    return Parts(options, reader, counter, recipe, prune)


def reader_counter(reader: Reader, tokenizer: str | None, emit: EventSink) -> TokenCounter:
    """Budgets count the reader's own tokens (a GGUF's vocabulary, a transformers
    tokenizer, a server's tokenize endpoint: its backend says), else those of
    ``--tokenizer`` (default Llama-3's, else the approximation with a notice)."""

    def fallback() -> TokenCounter:
        loaded = load_token_counter(tokenizer)
        if loaded.notice:
            emit(Notice(loaded.notice, role="tokenizer", instead="approximate token counts"))
        return loaded.counter

    return backend_of(reader).counter(reader, tokenizer, fallback)
