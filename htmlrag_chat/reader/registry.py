"""The reader backends in ``--reader auto``'s order, and the plan and load that walk them.

``auto`` takes the first backend that would answer; the other ``--reader`` values only ask
the backends whose ``chosen_by`` names them. A model found by default that fails to load
falls back to the extractive reader with a notice; a model the user named is an error.

A new backend is a module with a ``reader.backend.Backend`` subclass and one line in
``BACKENDS`` (docs/architecture.md shows one): nothing else tests which backend answers.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import ModelUnavailable, UserError, with_next_step
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.reader.backend import Backend, Reader, ReaderPlan
from htmlrag_chat.reader.backends import (
    ConfiguredServer,
    Extractive,
    FoundServer,
    GGUFFile,
    TransformersModel,
)
from htmlrag_chat.reader.choice import no_llm_hint
from htmlrag_chat.reader.extractive import ExtractiveReader

# What to do when a reader model named on purpose cannot be loaded.
LOCAL_NEXT_STEP = (
    "get one: htmlrag-chat models pull reader (or --model FILE.gguf), "
    "or answer without a model: --reader extractive"
)

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings

EXTRACTIVE = Extractive()
BACKENDS: list[Backend] = [
    ConfiguredServer(),
    FoundServer(),
    GGUFFile(),
    TransformersModel(),
    EXTRACTIVE,
]


def plan_reader(settings: ReaderSettings, around: Surroundings) -> ReaderPlan:
    """The reader ``settings`` choose, given what is ``around``: the first backend that
    ``settings.reader`` asks and that would answer."""
    for backend in BACKENDS:
        if settings.reader in backend.chosen_by:
            plan = backend.plan(settings, around)
            if plan is not None:
                return plan
    raise UserError(f"no reader backend answers --reader {settings.reader}")


def backend_of(reader: Reader) -> Backend:
    """The backend that built ``reader`` (its ``kind`` is the backend's name)."""
    for backend in BACKENDS:
        if backend.name == reader.kind:
            return backend
    raise LookupError(f"no reader backend is named {reader.kind!r}")


def load_reader(plan: ReaderPlan, emit: EventSink) -> tuple[ReaderPlan, Reader]:
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
