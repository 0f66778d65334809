"""The agent's CPU work in a thread, its events handed back to the event loop in order.

Kept apart from the question loop because stopping it is its own problem: a cancelled
question sets the thread's stop flag, which its stages check between small steps
(``cancel``), and waits for the thread to end before the cancellation goes on, so the next
question never shares the CPU, or the cache, with a stale one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from htmlrag_chat.base.cancel import StopFlag, watching
from htmlrag_chat.base.events import Event, EventSink

T = TypeVar("T")


@dataclass
class Worker:
    """Runs one piece of work at a time in a thread; ``idle`` waits for a stopped one."""

    _running: asyncio.Future[Any] | None = None

    async def idle(self) -> None:
        """Return once no thread of an earlier (stopped) question is still running; the
        events it sent before ending have been delivered by then."""
        if self._running is not None:
            await asyncio.wait([self._running])

    async def run(self, emit: EventSink, work: Callable[..., T], *args: object) -> T:
        """``work(*args, thread_emit)`` in a thread, its events delivered to ``emit`` on the
        loop in order; stopped at its next check when the caller is cancelled."""
        loop = asyncio.get_running_loop()
        flag = StopFlag()

        def thread_emit(event: Event) -> None:
            flag.check()
            loop.call_soon_threadsafe(emit, event)

        def run() -> T:
            with watching(flag):
                return work(*args, thread_emit)

        worker = self._running = asyncio.ensure_future(asyncio.to_thread(run))
        # A stopped thread ends with Cancelled, which nobody awaits: mark it as seen.
        worker.add_done_callback(lambda done: done.cancelled() or done.exception())
        try:
            return await asyncio.shield(worker)
        except asyncio.CancelledError:
            flag.set()
            # Its next check is a fraction of a second away. Waited for through repeated
            # cancellations too: an anyio cancel scope (the MCP server's calls run in one)
            # cancels the task again on every turn of the loop until it has left the scope.
            while not worker.done():
                with suppress(asyncio.CancelledError):
                    await asyncio.wait([worker])
            raise
        finally:
            if worker.done():
                self._running = None
