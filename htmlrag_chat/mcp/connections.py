"""``mcp --http``'s connections: how many it holds, how long a request's head may take, and
what running out of descriptors does.

uvicorn accepts every connection and waits as long as a client likes for its first request:
its keep-alive timeout starts only after a response, and ``limit_concurrency`` answers 503
only once a request's head has come. So ~1,100 idle connections without a token held every
descriptor of a process under the common limit of 1024 open files; the next accept failed
with EMFILE, and asyncio's report of it, a logged traceback whose handler imports a module
(a file to open), failed too and ended the server. Here:

- at most ``connection_cap`` connections are open at once: a quarter of the open-file
  limit, at most ``MAX_CONNECTIONS`` (the other descriptors are the models', the cache's
  and the libraries'). A connection past the cap takes the place of the oldest one still
  waiting for a request's head, so a flood holds only its newest connections and a real
  client gets in; when every connection is busy with a request, the new one is closed;
- a request's head must come within ``HEAD_SECONDS`` of the connection (or of the last
  response on it), else the connection is closed: a head that never ends holds nothing;
- asyncio accepts at most ``BACKLOG`` connections per wake-up, and an EMFILE it still meets
  (it then pauses accepting for a second) is one line on stderr, never a traceback or the
  end of the server; any other report that fails to print is one line too.
"""

from __future__ import annotations

import asyncio
import errno
import resource
import socket
from collections.abc import Callable
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 5.0
MAX_CONNECTIONS = 256
MIN_CONNECTIONS = 16
BACKLOG = 128
REPORT_EVERY_S = 10.0  # the EMFILE line, at most this often
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE)


def connection_cap(files: int) -> int:
    """The connections to hold at once under an open-file limit of ``files``."""
    if files == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(MIN_CONNECTIONS, min(MAX_CONNECTIONS, files // 4))


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with the cap and the head's deadline; each server gets
    its own subclass (``guarded``), whose ``waiting`` are its connections still waiting for
    a request's head, oldest first."""

    cap: ClassVar[int] = MAX_CONNECTIONS
    head_seconds: ClassVar[float] = HEAD_SECONDS
    waiting: ClassVar[dict[GuardedH11, None]] = {}

    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.cap and not self._evict_oldest():
            transport.close()  # every connection is busy with a request
            return
        self._await_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # a request's head came (or an error)
            self._stop_waiting()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._await_head()  # kept alive: the next request's head has its deadline too

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._stop_waiting()
        self.waiting[self] = None
        self._deadline = self.loop.call_later(self.head_seconds, self._close)

    def _stop_waiting(self) -> None:
        self.waiting.pop(self, None)
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _evict_oldest(self) -> bool:
        oldest = next((other for other in self.waiting if other is not self), None)
        if oldest is None:
            return False
        oldest._close()
        return True

    def _close(self) -> None:
        self._stop_waiting()
        if not self.transport.is_closing():
            self.transport.close()


def guarded(cap: int, head_seconds: float = HEAD_SECONDS) -> type[GuardedH11]:
    """A ``GuardedH11`` of its own for one server."""

    class Guarded(GuardedH11):
        waiting: ClassVar[dict[GuardedH11, None]] = {}

    Guarded.cap, Guarded.head_seconds = cap, head_seconds
    return Guarded


class LoopReports:
    """The event loop's exception handler: EMFILE and ENFILE while accepting are one line
    (at most every ``REPORT_EVERY_S``), since asyncio already pauses and tries again; any
    other report goes to asyncio's own handler, and a failure of that is one line."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.last: float | None = None

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in _OUT_OF_FILES:
            now = loop.time()
            if self.last is None or now - self.last >= REPORT_EVERY_S:
                self.last = now
                self.say("out of file descriptors: new connections wait (is the limit low?)")
            return
        try:
            loop.default_exception_handler(context)
        except Exception as failure:  # printing the report needed what ran out
            self.say(f"{context.get('message', 'event loop error')} ({type(failure).__name__})")


async def serve(app: Any, listening: socket.socket, say: Callable[[str], None]) -> None:
    """Serve ``app`` over HTTP/1.1 on ``listening`` until the process is told to stop."""
    asyncio.get_running_loop().set_exception_handler(LoopReports(say))
    cap = connection_cap(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    config = uvicorn.Config(
        app, http=guarded(cap), backlog=BACKLOG, log_level="warning", lifespan="on"
    )
    await uvicorn.Server(config).serve(sockets=[listening])
