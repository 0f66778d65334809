"""From settings to working parts: resolved once into an ``AssemblyPlan``, then loaded.

``resolve`` decides everything that does not need a model loaded: the device models run on
(a device named that cannot be used is an error here, before any search), the reader that
answers (``reader/registry.py``: the servers asked, the model files found) and the pruning
settings on that device. ``build_parts`` loads from the plan alone: the reader, through its
backend; the token counter and the default budget, which its backend says; the pruning
recipe (``pruning.factory``). ``models`` and ``config`` show the same plan
(``assembly/inventory.py``).

Kept apart from ``ask`` so that the chat app and the MCP server build the same parts and
degrade the same way, always with a notice: no local reader model found under ``--reader
auto`` means extractive answers, while a model the user named that cannot be used is an
error. Only assembly lives here; what each part is made of is decided below it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import EventSink, Notice, stage
from htmlrag_chat.html.rendering import rendered_counter
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.hub import unobtainable
from htmlrag_chat.pruning.factory import (
    PrunePlan,
    PruneSettings,
    build_recipe,
    hub_models,
    plan_pruning,
    warm_up,
)
from htmlrag_chat.pruning.recipe import Recipe
from htmlrag_chat.pruning.tokens import token_counter
from htmlrag_chat.reader.backend import ReaderPlan
from htmlrag_chat.reader.registry import load_reader, look_around, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.settings.layered import Resolved
from htmlrag_chat.settings.tree import default
from htmlrag_chat.sources.registry import named, nothing_to_read
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:  # torch and transformers load only when a model is actually used
    from htmlrag_chat.agent.checking import Checker
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.reader.backend import LoadedReader
    from htmlrag_chat.sources.source import PageSource, SourceEntry
    from htmlrag_chat.store.db import Store


@dataclass(frozen=True)
class AgentOptions:
    """Everything ``ask`` and the chat app take from the command line to build an agent."""

    reader: ReaderSettings = field(default_factory=ReaderSettings)
    prune: PruneSettings = field(default_factory=PruneSettings)
    rounds: int = default("research.rounds")
    pages: int = default("research.pages")
    max_queries: int = default("research.max_queries")
    plan: str = default("research.plan")  # a first question's plan beside its search
    replay: bool = False
    refresh: float | None = None  # --refresh: redo cached searches and pages older than this
    deadline: float | None = default("web.deadline")  # seconds after the first page
    search: SearchSettings = field(default_factory=SearchSettings)
    web: bool = default("research.web")  # False: only the sources the user names, no network
    max_parts: int = default("research.max_parts")  # a research's parts (research/)
    # The settings of the sources the user names (``sources/registry.py``: --docs, --saved)
    # that differ from their defaults, by name.
    sources: dict[str, Any] = field(default_factory=dict, hash=False)

    @classmethod
    def of(
        cls, settings: Resolved, replay: bool = False, refresh: float | None = None
    ) -> AgentOptions:
        """The options the settings in effect give, each section to its dataclass; the
        ``[research]`` settings that are no field here are the sources'."""
        research, own = settings.section("research"), {f.name for f in fields(cls)}
        sources = {
            name: value
            for name, value in research.items()
            if name not in own and value != default(f"research.{name}")
        }
        return cls(
            reader=ReaderSettings.of(settings.section("reader")),
            prune=PruneSettings.of(settings),
            search=SearchSettings(**settings.section("search")),
            replay=replay,
            refresh=refresh,
            sources=sources,
            **{name: value for name, value in research.items() if name in own},
            **settings.section("web"),
        )

    def source(self, name: str) -> Any:
        """The setting ``name`` of a source the user names: as given, else its default."""
        return self.sources[name] if name in self.sources else default(f"research.{name}")

    def named_sources(self) -> list[tuple[SourceEntry, Any]]:
        """The sources these options name, each with its setting's value, in the order each
        round asks them (``sources.registry.named``)."""
        return named(self.source)


@dataclass(frozen=True)
class AssemblyPlan:
    """The settings resolved once, before anything loads; everything after reads this."""

    options: AgentOptions
    reader: ReaderPlan  # its settings carry the device
    prune: PrunePlan  # on the same device, its models checked


def resolve(options: AgentOptions) -> AssemblyPlan:
    """``options`` resolved: the device models run on, the reader plan (the servers asked
    within a fraction of a second, the model files looked up) and the pruning plan on that
    device, the hub models of both looked up in one pass. A device or a reader that cannot
    be used is an error here, before any model loads or any search."""
    device = pick_device(options.reader.device)
    settings = replace(options.reader, device=device)
    reader = plan_reader(settings, look_around(settings)).checked()
    prune = replace(options.prune, device=device)
    unusable = unobtainable({**hub_models(prune), **reader.hub_models})
    return AssemblyPlan(options, reader.looked_up(unusable), plan_pruning(prune, unusable))


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
    reader: LoadedReader
    counter: TokenCounter
    recipe: Recipe
    prune: PruneSettings  # the plan's pruning, its budget the reader's, fitted to its window
    checker: Checker  # after each answer: the check, its judge, the corrections
    plan_first: bool = True  # a first question's plan beside its search (``plans_beside``)

    def agent(
        self,
        store: Store,
        emit: EventSink,
        budget: int | None = None,
        pages: int | None = None,
        rendering: str | None = None,
    ) -> Agent:
        """An agent on ``store`` pruning to ``budget`` tokens (default: the options'),
        reading ``pages`` pages a round (default: the options'), its budget counting the
        pages as ``rendering`` writes them for the reader (default: the options')."""
        from htmlrag_chat.agent.loop import Agent

        options = self.options
        rendering = rendering or self.prune.render
        budget = budget or self.prune.budget
        assert budget is not None, "build_parts gave the pruning its backend's budget"
        return Agent(
            sources=page_sources(options, store, emit),
            reader=self.reader,
            stages=self.recipe.stages(budget),
            counter=rendered_counter(self.counter, rendering),
            emit=emit,
            rounds=options.rounds,
            max_pages=pages or options.pages,
            max_queries=options.max_queries,
            deadline=options.deadline,
            rendering=rendering,
            checker=self.checker,
            plan_first=self.plan_first,
        )


def page_sources(options: AgentOptions, store: Store, emit: EventSink) -> list[PageSource]:
    """Where the agent's pages come from, in the order each round asks them: the sources
    the user names first (``sources/registry.py``), then the web (``--no-web``: the list
    without it)."""
    from htmlrag_chat.sources.online import WebSource
    from htmlrag_chat.sources.recorder import WebRecorder
    from htmlrag_chat.web.search import WebSearcher

    sources = [entry.build(value, store) for entry, value in options.named_sources()]
    if options.web:
        searcher = WebSearcher(options.search, emit)
        recorder = WebRecorder(store, searcher, replay=options.replay, max_age=options.refresh)
        sources.append(WebSource(recorder))
    return sources


def build_parts(options: AgentOptions, store: Store, emit: EventSink) -> Parts:
    """Resolve ``options``, then load from the plan: the reader (its backend says its
    token counter and its budget), then the pruning stages, the embedding model loading in
    a thread meanwhile and while the question is searched and fetched; a notice for each
    fallback taken.

    The reader loads first: llama.cpp reads ``OMP_WAIT_POLICY`` when it is imported, and
    torch (the generative pruner) initialises the same OpenMP runtime with spinning waits,
    which made a GGUF's prefill 3x slower on a busy machine when torch came first."""
    from htmlrag_chat.agent.planning import plans_beside
    from htmlrag_chat.store.embeddings import embeddings_for

    check_sources(options)
    with stage(emit, "load") as counts:
        plan = resolve(options)
        loaded, reader = load_reader(plan.reader, emit)
        tokenizer = plan.prune.settings.tokenizer
        counter = loaded.backend.counter(reader, tokenizer, partial(token_counter, tokenizer, emit))
        given = plan.prune.settings.budget
        budget = loaded.backend.budget(reader, given, lambda message: emit(Notice(message)))
        counts["warming"] = int(warm_up(plan.prune))
        recipe = build_recipe(plan.prune, emit, embeddings_for(store))
        prune = replace(plan.prune.settings, budget=budget)
        checker = build_checker(options.reader, reader, emit)
        plan_first = plans_beside(options.plan, loaded.backend.free_while_searching(reader))
    return Parts(options, reader, counter, recipe, prune, checker, plan_first)


def build_checker(settings: ReaderSettings, reader: LoadedReader, emit: EventSink) -> Checker:
    """What runs after each answer: the judge the settings choose for ``reader`` (a notice
    when it is not the reader, or when there is none for a reason worth saying) and the
    correction switch."""
    from htmlrag_chat.agent.checking import Checker
    from htmlrag_chat.reader.judge import choose_judge

    choice = choose_judge(settings, reader.chat)
    if choice.why:
        emit(Notice(choice.why))
    return Checker(choice.model, choice.alone, settings.correct_citations)


def check_sources(options: AgentOptions) -> None:
    """The sources the user names are there and readable (each its own check), and
    something is to be read at all: one line before any model loads."""
    given = options.named_sources()
    if not options.web and not given:
        raise UserError(nothing_to_read())
    for entry, value in given:
        entry.check(value)
