"""What a reader backend is: one way of answering, and all the rest of the program asks of it.

A backend is a ``Backend`` subclass listed in ``reader/registry.py`` (``BACKENDS``, in
``--reader auto``'s order). Given the reader settings and what was found around
(``reader/choice.py``: servers, model files, loading nothing) it says whether it would answer
(``plan``); asked later, it loads that reader, says which tokens budgets count, the budget
it reads best, how to name it in a few words, and its row in ``htmlrag-chat models``. The
assembly (``assembly/wiring.py``), ``models`` (``assembly/inventory.py``), ``config`` and the
chat app ask the plan's backend and never test which backend it is, so a new backend is one
module with a subclass and one line in ``BACKENDS`` (docs/architecture.md shows one).

A backend owns everything about it: what it finds on this machine (``look``, gathered by
``registry.look_around`` with the servers), the settings it adds to the tree (``settings``,
which reach it in ``ReaderSettings.options``), the optional packages it needs (``extra``),
the palette's entries for it (``palette``), the model a pull would get for it (``offered``),
and, through the chat model it loads, what an evaluation records of it and how it starts
afresh (``ChatModel.identity``, ``ChatModel.forget``).

Its ``name`` is the one name of the backend everywhere: the plan's, the answer's ``reader``
in the history and ``--json``, ``config``'s "answers with". ``--reader`` chooses among
backends: ``auto`` asks each in order, the other values only those whose ``chosen_by``
names them (``local``: the GGUF and transformers backends).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.events import Notice
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.modelio.extras import Extra
from htmlrag_chat.modelio.listing import ModelRow
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.settings.tree import BUDGET, CPU_BUDGET, Setting

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings

# A reader a backend loads (the agent asks only what ``agent.reading.Reader`` names of it).
LoadedReader = LLMReader | ExtractiveReader
PROMPT_RESERVE = 1024  # tokens of instructions, titles, URLs and history around the sources
MIN_BUDGET = 256  # a window smaller than that and the answer leaves the reader no sources
Warn = Callable[[str], None]  # a notice for the user (the line ``-v`` shows)
Counting = Callable[[], TokenCounter]  # loads --tokenizer's counter, only when asked


@dataclass(frozen=True)
class ReaderPlan:
    """The reader that will answer, decided before anything loads."""

    backend: Backend
    settings: ReaderSettings  # those it was made from, the device resolved
    model: str  # the server's model name, the GGUF file, the hub id or folder, "extractive"
    why: str  # one line for the user
    server: Server | None = None  # the server that answers, for the server backends
    problem: str | None = None  # why these settings cannot work (loading it fails with it)
    # Why its hub model cannot be loaded here, found with the pruner's models before
    # anything loads (``wiring.resolve``); loading raises it, so ``auto`` can fall back.
    unusable: ModelUnavailable | None = None

    @property
    def auto(self) -> bool:
        """Chosen by ``--reader auto``: only what is here, never a download."""
        return self.settings.reader == "auto"

    def checked(self) -> ReaderPlan:
        """This plan, or ``ModelUnavailable`` saying why it cannot work (before anything
        loads: a model named that is not here is said at once)."""
        if self.problem is not None:
            raise ModelUnavailable(self.problem)
        return self

    @property
    def hub_models(self) -> dict[str, bool]:
        """The hub models loading it reads, each with whether only what is here will do."""
        return self.backend.hub_models(self)

    def looked_up(self, unusable: Mapping[str, ModelUnavailable]) -> ReaderPlan:
        """This plan, told why its hub model cannot be loaded here when ``unusable`` (one
        pass over every model the settings name, ``modelio.hub.unobtainable``) says so."""
        problems = (unusable[model] for model in self.hub_models if model in unusable)
        return replace(self, unusable=next(problems, None))

    @property
    def label(self) -> str:
        """The reader in a few words (the chat app's header and palette, ``config``)."""
        if self.problem is not None:
            return f"none: {self.problem}"
        return self.backend.label(self)


class Backend:
    """One way of answering. A subclass sets ``name`` and ``chosen_by`` and gives ``plan``
    and ``load``; the other answers default to those of a model read elsewhere (a server):
    the budget for a fast reader, ``--tokenizer``'s tokens, a row that names the model."""

    name: ClassVar[str]  # the one name of the backend (plans, answers, config, models)
    chosen_by: ClassVar[tuple[str, ...]]  # the --reader values that ask it ("auto": all)
    settings: ClassVar[tuple[Setting, ...]] = ()  # its own, in the [reader] section
    extra: ClassVar[Extra | None] = None  # the optional packages it loads with
    # Where its palette entries sit: 0 first (the extractive reader, always there), 1 the
    # models on disk, 2 the servers' models; in ``auto``'s order within each.
    palette_rank: ClassVar[int] = 1

    def look(self, settings: ReaderSettings, cache_dir: Path | None) -> str | None:
        """What of its own this machine holds for ``settings`` (a model file, a complete
        folder), found loading nothing; ``plan`` reads it in ``around.here[name]``."""
        return None

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        """The chat app's palette entries for it (the settings that choose it, and a line
        of help), given what is ``around`` (the palette's: every server it found listed);
        none by default."""
        return []

    def on_disk(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        """The palette entry of the model this backend found on disk (``look``), run in
        this process: a backend of a local model returns it as its ``palette``."""
        here = around.here.get(self.name)
        if here is None:
            return []
        chosen = replace(current, reader="local", model=here, base_url=None)
        return [(chosen, "The model on disk, run in this process")]

    def offered(self, device: str, cache_dir: Path | None) -> ModelRow | None:
        """The model ``models pull reader`` would get for it on ``device``, listed when
        nothing answers but the extractive reader; None when it is not the one to get."""
        return None

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        """This backend's plan when it would answer under ``settings``, given what is
        ``around``, or a plan with a ``problem`` when the user named something for it that
        cannot work; None leaves the choice to the backends after it."""
        raise NotImplementedError

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        """The planned reader, loaded (slow: models load here). ``ModelUnavailable`` when
        its model cannot be loaded, ``ReaderFailed`` when its server cannot be reached."""
        raise NotImplementedError

    def hub_models(self, plan: ReaderPlan) -> dict[str, bool]:
        """The hub models (id or folder) that loading the plan reads, each with whether
        only what is here will do; looked up with the pruner's in one pass before anything
        loads; none for a reader that loads no hub model."""
        return {}

    def label(self, plan: ReaderPlan) -> str:
        return f"{one_line(plan.model)} ({self.name})"

    def announce(self, plan: ReaderPlan) -> Notice:
        """The line that says, under ``auto``, who answers."""
        return Notice(plan.why)

    def counter(
        self, reader: LoadedReader, tokenizer: str | None, fallback: Counting
    ) -> TokenCounter:
        """The counter budgets use: the reader's own tokens (``own_counter``) unless the
        user named a ``--tokenizer``, else ``fallback()``'s (``--tokenizer``'s, default
        Llama-3's, else the approximation)."""
        own = None if tokenizer else self.own_counter(reader)
        return own if own is not None else fallback()

    def own_counter(self, reader: LoadedReader) -> TokenCounter | None:
        """A counter of the tokens this reader reads, when it has one (loaded already)."""
        return None

    def reads_on_cpu(self, reader: LoadedReader) -> bool:
        """Whether the reader reads its prompts on this machine's CPU, where the prefill is
        the wait (a smaller default budget)."""
        return False

    def free_while_searching(self, reader: LoadedReader) -> bool:
        """Whether the reader is free to plan a first question while it is searched
        (``research.plan`` auto): in this process on a GPU. Not on this machine's CPU,
        whose cores pruning and the answer need, nor a server, which may run on that CPU
        and may serve one request at a time (llama-cpp-python's then keeps its tokenize
        endpoint, which budgets count with, waiting for the plan)."""
        return False

    def default_budget(self, reader: LoadedReader) -> int:
        """The pruning budget when none is given: ``CPU_BUDGET`` for a reader that
        prefills on this machine's CPU, where the prefill is the wait; else ``BUDGET``."""
        return CPU_BUDGET if self.reads_on_cpu(reader) else BUDGET

    def budget(self, reader: LoadedReader, given: int | None, warn: Warn) -> int:
        """The pruning budget: ``given``, else ``default_budget``; lowered, with a notice,
        when the reader's window cannot hold it with the longest answer and the prompt
        around the sources (``PROMPT_RESERVE``)."""
        budget = given or self.default_budget(reader)
        if not isinstance(reader, LLMReader) or reader.chat.context_tokens is None:
            return budget
        window, answer = reader.chat.context_tokens, reader.max_tokens
        if budget + answer + PROMPT_RESERVE <= window:
            return budget
        fitted = max(window - answer - PROMPT_RESERVE, MIN_BUDGET)
        warn(f"the reader's context of {window} tokens fits a budget of {fitted}")
        return fitted

    def row(self, plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
        """The reader's row in ``htmlrag-chat models`` (``device``: where local models
        would run; ``cache_dir``: the Hugging Face cache), loading nothing."""
        present = plan.problem is None
        return ModelRow("reader", plan.model, self.name, None, present, None, None, plan.why)
