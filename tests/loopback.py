"""A real aiohttp server on a free 127.0.0.1 port, for tests that need the other end of a
socket (a web site, an LLM server, a hub)."""

from __future__ import annotations

from collections.abc import AsyncIterator
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
