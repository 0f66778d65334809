"""What both in-process readers (transformers and llama.cpp) share: generation in a worker
thread streamed to the event loop, and the answer's length fitted to the window.

A model call cannot be interrupted from the event loop, so the thread checks a stop event
between tokens (and llama.cpp between prefill pieces); cancelling the consuming task sets it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from htmlrag_chat.base.errors import UserError

Put = Callable[[str], None]
T = TypeVar("T")
_END = object()


async def thread_stream(work: Callable[[Put, threading.Event], None]) -> AsyncIterator[str]:
    """The text ``work(put, stop)`` puts from a worker thread, as it comes; what ``work``
    raises is raised here; leaving early (cancellation) sets ``stop``. Pieces put while the
    event loop had not yet taken the last ones come joined, on one wake-up of the loop."""
    loop = asyncio.get_running_loop()
    arrived = asyncio.Event()
    pending: list[object] = []
    lock = threading.Lock()
    stop = threading.Event()

    def put(item: object) -> None:
        with lock:
            pending.append(item)
            if len(pending) > 1:
                return  # a wake-up is on its way already
        loop.call_soon_threadsafe(arrived.set)

    def run() -> None:
        try:
            work(put, stop)
        finally:
            put(_END)

    worker = asyncio.ensure_future(asyncio.to_thread(run))
    try:
        while True:
            await arrived.wait()
            arrived.clear()
            with lock:
                items = pending[:]
                pending.clear()
            text = "".join(str(item) for item in items if item is not _END)
            if text:
                yield text
            if _END in items:
                break
        await worker  # re-raises what generation raised
    finally:
        stop.set()


async def thread_call(work: Callable[[threading.Event], T]) -> T:
    """``work(stop)`` run in a worker thread, its result returned; leaving early
    (cancellation) sets ``stop``, which ``work`` checks between its model calls."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    finally:
        stop.set()


def fit_answer(name: str, prompt_tokens: int, max_tokens: int, window: int | None) -> int:
    """The answer's length shortened to what the window leaves; an over-long prompt is an
    error that says what to do."""
    if window is None:
        return max_tokens
    room = window - prompt_tokens
    if room < 16:
        raise UserError(
            f"the reader prompt has {prompt_tokens} tokens, more than {name}'s context of "
            f"{window} leaves room for: lower --budget"
        )
    return min(max_tokens, room)
