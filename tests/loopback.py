"""A real aiohttp server on a free 127.0.0.1 port, for tests that need the other end of a
socket (a web site, an LLM server, a hub)."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from aiohttp import web


@asynccontextmanager
async def serve_app(app: web.Application, shutdown_timeout: float = 1.0) -> AsyncIterator[int]:
    """Serve ``app`` until the block ends; yields the port. Handlers are cancelled when
    their client disconnects, as a real server stops working for a client that left."""
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=shutdown_timeout)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


class ThreadedApp:
    """``serve_app`` on its own loop in a thread, for callers that block or run their own
    loop (the CLI's ``main``). Use as a context manager; it gives the port."""

    def __init__(self, app: web.Application) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> int:
        self.thread.start()
        self.context = serve_app(self.app)
        return asyncio.run_coroutine_threadsafe(self.context.__aenter__(), self.loop).result(5)

    def __exit__(self, *exc: object) -> None:
        done = asyncio.run_coroutine_threadsafe(self.context.__aexit__(None, None, None), self.loop)
        done.result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@asynccontextmanager
async def serve_bytes(answer: Callable[[], bytes | list[bytes]]) -> AsyncIterator[int]:
    """A loopback server that reads each HTTP request (headers, then ``Content-Length``
    bytes) and answers with exactly the bytes ``answer()`` gives (a list: written one piece
    at a time), then closes: for what an HTTP framework refuses to send (control characters
    in a header, a broken stream). Yields the port."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = re.search(rb"(?im)^content-length: *(\d+)", head)
            await reader.readexactly(int(length[1]) if length else 0)
            pieces = answer()
            for piece in [pieces] if isinstance(pieces, bytes) else pieces:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)  # each piece its own write, as far as the loop goes
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client left
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


def unused_port() -> int:
    """A loopback port nothing listens on (bound, then released): for a server to start on,
    or for a client that must find it closed at once, with no request leaving the machine."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
