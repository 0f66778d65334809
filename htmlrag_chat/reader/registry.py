"""The reader backends in ``--reader auto``'s order, and the plan and load that walk them.

``auto`` takes the first backend that would answer; the other ``--reader`` values only ask
the backends whose ``chosen_by`` names them. A model found by default that fails to load
falls back to the extractive reader with a notice; a model the user named is an error.

A new backend is a module with a ``reader.backend.Backend`` subclass and one line in
``BACKENDS`` (docs/architecture.md shows one): nothing else tests which backend answers.
What the backends own is drawn in from here: each one's findings on disk (``look_around``),
its settings into the tree and its extra (``register``, run on this list when imported).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import ModelUnavailable, UserError, with_next_step
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.modelio.extras import declare_extra
from htmlrag_chat.modelio.listing import ModelRow
from htmlrag_chat.reader.backend import Backend, LoadedReader, ReaderPlan
from htmlrag_chat.reader.backends.configured_server import ConfiguredServer
from htmlrag_chat.reader.backends.found_server import FoundServer
from htmlrag_chat.reader.backends.gguf_file import GGUFFile
from htmlrag_chat.reader.backends.no_llm import Extractive
from htmlrag_chat.reader.backends.transformers_model import TransformersModel
from htmlrag_chat.reader.choice import Surroundings, no_llm_hint, servers_around
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.settings.tree import declare

# What to do when a reader model named on purpose cannot be loaded.
LOCAL_NEXT_STEP = (
    "get one: htmlrag-chat models pull reader (or --model FILE.gguf), "
    "or answer without a model: --reader extractive"
)

if TYPE_CHECKING:
    from htmlrag_chat.reader.settings import ReaderSettings

EXTRACTIVE = Extractive()
BACKENDS: list[Backend] = [
    ConfiguredServer(),
    FoundServer(),
    GGUFFile(),
    TransformersModel(),
    EXTRACTIVE,
]


def register(backends: list[Backend]) -> None:
    """Draw into the program what ``backends`` declare: their settings into the tree (the
    options, the file's checks, ``config``), their extras (the install hints)."""
    for backend in backends:
        declare(*backend.settings)
        if backend.extra is not None:
            declare_extra(backend.extra)


register(BACKENDS)


def look_around(settings: ReaderSettings, cache_dir: Path | None = None) -> Surroundings:
    """What ``plan_reader`` needs to know, found without loading anything: the servers
    (``choice.servers_around``) and what each backend finds on disk."""
    configured, found = servers_around(settings)
    here = {}
    for backend in BACKENDS:
        looked = backend.look(settings, cache_dir)
        if looked is not None:
            here[backend.name] = looked
    return Surroundings(configured, found, here)


def palette_entries(
    current: ReaderSettings, around: Surroundings
) -> list[tuple[ReaderSettings, str]]:
    """The backends' own entries for the chat app's palette (``Backend.palette``), by
    their ``palette_rank``, in ``auto``'s order within each."""
    ranked = sorted(BACKENDS, key=lambda backend: backend.palette_rank)
    return [entry for backend in ranked for entry in backend.palette(current, around)]


def reader_row(plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
    """The reader's row in ``models``: its backend's, or, when only the extractive reader
    answers under ``auto``, the model a pull would get (the first backend that offers one)."""
    if plan.backend is EXTRACTIVE and plan.auto:
        for backend in BACKENDS:
            offered = backend.offered(device, cache_dir)
            if offered is not None:
                return offered
    return plan.backend.row(plan, device, cache_dir)


def plan_reader(settings: ReaderSettings, around: Surroundings) -> ReaderPlan:
    """The reader ``settings`` choose, given what is ``around``: the first backend that
    ``--reader`` asks and that would answer."""
    for backend in BACKENDS:
        if settings.reader in backend.chosen_by:
            plan = backend.plan(settings, around)
            if plan is not None:
                return plan
    raise UserError(f"no reader backend answers --reader {settings.reader}")


def backend_of(reader: LoadedReader) -> Backend:
    """The backend that built ``reader`` (its ``kind`` is the backend's name)."""
    for backend in BACKENDS:
        if backend.name == reader.kind:
            return backend
    raise LookupError(f"no reader backend is named {reader.kind!r}")


def load_reader(plan: ReaderPlan, emit: EventSink) -> tuple[ReaderPlan, LoadedReader]:
    """The planned reader, loaded, and the plan it answers by (its backend gives the token
    counter and the budget). Under ``auto`` one line says which server or model answers,
    and a model found by default that fails to load means the extractive reader with a
    notice (and its plan); a reader or model named on purpose that cannot be used is an
    error (``ModelUnavailable``, ``ReaderFailed``)."""
    backend = plan.checked().backend  # settings that cannot work never fall back
    try:
        reader = backend.load(plan, lambda message: emit(Notice(message)))
    except ModelUnavailable as error:
        if not plan.auto or plan.settings.model is not None:  # named: an error, and what to do
            raise with_next_step(error, LOCAL_NEXT_STEP) from None
        why = f"no local reader ({error}): answering extractively; {no_llm_hint()}"
        plan = replace(plan, backend=EXTRACTIVE, model="extractive", why=why)
        reader = ExtractiveReader()
    if plan.auto:
        emit(plan.backend.announce(plan))
    return plan, reader
