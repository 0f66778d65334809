"""The service's side: the parts loaded once, one question at a time over the socket.

A caller sends one line: the token from the service's file, the fingerprint of its settings,
the question and the conversation's earlier turns. The service answers ``{"accepted": true}``
(or ``{"refused": why}``: another user, a wrong token, other settings), then the question's
events as they come, then the answer, or the one-line error a question ends with. A caller
that hangs up (Ctrl+C in ``ask``) stops its question, as a cancel stops one in process.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlrag_chat.base.errors import EXIT_INTERNAL, UserError
from htmlrag_chat.base.events import Event
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.reader import Turn
from htmlrag_chat.service.place import INFO, SOCKET, Running, find, make_folder, publish
from htmlrag_chat.service.wire import MAX_LINE, encode, event_message, from_wire, to_wire

if TYPE_CHECKING:
    from htmlrag_chat.assembly.wiring import Parts
    from htmlrag_chat.store.db import Store


@dataclass
class Service:
    """The loaded parts, answering the callers that may ask them."""

    parts: Parts
    cache: Store
    digest: str  # the fingerprint of its settings (``wire.fingerprint``)
    running: Running | None = None  # set once it listens
    _one: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await reader.readline() or b"{}")
            refused = self._refusal(writer, request)
            if refused:
                writer.write(encode({"refused": refused}))
                return
            turns = from_wire(list[Turn], request.get("history", []))
            async with self._one:
                writer.write(encode({"accepted": True}))
                await self._answer(str(request["question"]), turns, reader, writer)
        except (ConnectionError, ValueError, KeyError, UserError):
            return  # a caller that is not ``ask``, or one gone: nothing to answer
        finally:
            with suppress(ConnectionError):
                await writer.drain()
            writer.close()

    def _refusal(self, writer: asyncio.StreamWriter, request: Any) -> str:
        """Why this caller is not answered ("" when it is)."""
        assert self.running is not None
        if not _same_user(writer.get_extra_info("socket")):
            return "another user's"
        if not isinstance(request, dict):
            return "not a question"
        token = str(request.get("token", ""))
        if not hmac.compare_digest(token.encode(), self.running.token.encode()):
            return "a wrong token"
        if request.get("fingerprint") != self.digest:
            return "it runs with other settings or another cache file"
        return ""

    async def _answer(
        self,
        question: str,
        turns: list[Turn],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        def emit(event: Event) -> None:
            writer.write(encode(event_message(event)))

        agent = self.parts.agent(self.cache, emit)
        asked = asyncio.ensure_future(agent.ask(question, turns))
        gone = asyncio.ensure_future(reader.read())  # the caller sends nothing more: EOF
        await asyncio.wait({asked, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not asked.done():  # hung up: the question stops, as a cancel stops it in process
            asked.cancel()
            with suppress(asyncio.CancelledError):
                await asked
            return
        try:
            answer = asked.result()
        except UserError as error:
            writer.write(encode({"error": str(error), "exit": error.exit_code}))
        except Exception as error:  # said to the caller, who exits with it: not lost
            print(f"service: internal error: {error!r}", file=sys.stderr)
            message = f"internal error in the service: {one_line(repr(error))[:200]}"
            writer.write(encode({"error": message, "exit": EXIT_INTERNAL}))
        else:
            writer.write(encode({"answer": to_wire(answer)}))


def _same_user(connection: socket.socket | None) -> bool:
    """Whether the process at the other end is this user's (Linux says, through the
    socket; elsewhere the folder only this user can enter is the check)."""
    peer_credentials = getattr(socket, "SO_PEERCRED", None)
    if connection is None or peer_credentials is None:
        return True
    data = connection.getsockopt(socket.SOL_SOCKET, peer_credentials, struct.calcsize("3i"))
    _, uid, _ = struct.unpack("3i", data)
    return bool(uid == os.getuid())


async def serve(service: Service, say: Callable[[str], None]) -> None:
    """Listen for ``ask`` until stopped (Ctrl+C), then leave no socket or file behind."""
    place = make_folder()
    path = place / SOCKET
    await _take_over(path)
    mask = os.umask(0o177)  # the socket is the user's alone from the moment it exists
    try:
        server = await asyncio.start_unix_server(service.handle, path=path, limit=MAX_LINE)
    finally:
        os.umask(mask)
    service.running = publish(path, os.getpid())
    say(f"serving on {path}: ask answers through this process while it runs (Ctrl+C stops it)")
    serving = asyncio.ensure_future(server.serve_forever())
    loop = asyncio.get_running_loop()
    with suppress(NotImplementedError):  # a service manager's stop: the same as Ctrl+C
        loop.add_signal_handler(signal.SIGTERM, serving.cancel)
    this = asyncio.current_task()
    try:
        async with server:
            await serving
    except asyncio.CancelledError:
        if this is not None and this.cancelling():  # Ctrl+C: on to the command line
            raise
    finally:
        for leftover in (place / INFO, path):
            leftover.unlink(missing_ok=True)


async def _take_over(path: Path) -> None:
    """A socket left by a service that ended without cleaning up is removed; one that
    answers is another service, and an error."""
    if not path.exists():
        return
    running, _ = find()
    try:
        _, writer = await asyncio.open_unix_connection(path)
    except OSError:
        path.unlink()
        return
    writer.close()
    who = f" (pid {running.pid})" if running is not None else ""
    raise UserError(f"a service already runs on {path}{who}: stop it first")
