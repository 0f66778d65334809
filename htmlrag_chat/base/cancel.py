"""Stopping a question's CPU work from outside the thread that does it.

Esc in the chat app and Ctrl+C cancel the question's asyncio task, but cleaning and pruning
run in a worker thread, inside model calls that the event loop cannot interrupt. The agent
gives each worker a ``StopFlag`` and sets it when the question is cancelled; the stages call
``check()`` between small units of work, which raises ``Cancelled`` once the flag is set: the
generative pruner between its forward passes, cleaning between pages, torch models before
each layer (``make_stoppable``) and the numpy encoder (``scoring.bert``) before each half of
every layer, so that even a large batch of embeddings stops within a few matrix products,
without giving up the speed of large batches. On the CPU a stop is noticed within a tenth of
a second for the bundled MiniLM; one layer of a large model over a long prompt is the step
that cannot be cut short.

The flag reaches the stages through a context variable set in the worker thread
(``watching``), so no signature between the agent and the scorers changes, and work outside
a question (the ``prune`` command, benchmarks) checks no flag at all.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # torch loads only with the models
    from torch.nn import Module

M = TypeVar("M", bound="Module")


class Cancelled(Exception):
    """The question was stopped; raised by ``check`` in the stage that was running."""


class StopFlag:
    """Set once, from any thread; checked by the worker."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def set(self) -> None:
        self._event.set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled


_CURRENT: ContextVar[StopFlag | None] = ContextVar("htmlrag_chat_stop_flag", default=None)


@contextmanager
def watching(flag: StopFlag) -> Iterator[StopFlag]:
    """Make ``flag`` the one ``check()`` reads, in this thread, for the ``with`` block."""
    token = _CURRENT.set(flag)
    try:
        yield flag
    finally:
        _CURRENT.reset(token)


def check() -> None:
    """Raise ``Cancelled`` if the work of this thread was stopped; else return at once."""
    flag = _CURRENT.get()
    if flag is not None:
        flag.check()


def make_stoppable(model: M) -> M:
    """Hook ``model`` and each block of its stacks (the children of every ``ModuleList``
    and ``Sequential``: a transformer's layers, an encoder's) to ``check()`` before they
    run, so a stopped question ends inside a forward pass within one layer's work, however
    large the batch. Outside a question the check finds no flag. Layers rather than every
    module: a 32-layer model makes 33 checks a decoded token instead of about 420."""
    from torch.nn import ModuleList, Sequential

    model.register_forward_pre_hook(_check_hook)
    for module in model.modules():
        if isinstance(module, ModuleList | Sequential):
            for block in module.children():
                block.register_forward_pre_hook(_check_hook)
    return model


def _check_hook(module: object, args: object) -> None:
    check()
