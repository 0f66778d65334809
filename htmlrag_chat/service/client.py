"""``ask``'s side: hand the question to the user's service when one runs with its settings.

``connect`` finds the service (``place.find``: this user's, 0700 folder, 0600 socket and
file), sends the question and waits for it to be accepted; ``Call.answer`` then shows the
question's events as they come and returns the answer. Whenever a service is there but not
used (another user's file, other settings, not answering), ``ask`` answers in its own
process and says why in one line; when one answers, one line says so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.base.errors import EXIT_INTERNAL, UserError
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.reader import Turn
from htmlrag_chat.service.place import Running, find
from htmlrag_chat.service.wire import (
    MAX_LINE,
    WireError,
    encode,
    event_of,
    from_wire,
    to_wire,
)


class ServiceFailed(UserError):
    """The question failed in the service: its own one line and exit status."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class Call:
    """A question the service accepted."""

    running: Running
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def answer(self, emit: EventSink) -> Answer:
        """The question's events to ``emit`` as they come, then its answer. Leaving early
        (Ctrl+C) hangs up, which stops the question in the service."""
        try:
            while line := await self.reader.readline():
                message = json.loads(line)
                if "event" in message:
                    emit(event_of(message))
                elif "answer" in message:
                    answer: Answer = from_wire(Answer, message["answer"])
                    return answer
                elif "error" in message:
                    code = message.get("exit")
                    raise ServiceFailed(
                        one_line(str(message["error"])),
                        code if isinstance(code, int) else EXIT_INTERNAL,
                    )
            raise WireError(f"{self.running.line} hung up before the answer")
        except (ValueError, ConnectionError) as error:
            raise WireError(f"{self.running.line} sent no answer: {error}") from None
        finally:
            self.writer.close()


async def connect(
    digest: str, question: str, turns: Sequence[Turn], emit: EventSink
) -> Call | None:
    """The question accepted by the user's service, or None (with one line why, unless no
    service runs at all): the caller then answers it itself."""
    running, problem = find()
    if running is None:
        if problem:
            emit(Notice(f"a service file is here but not used: {problem}"))
        return None
    try:
        reader, writer = await asyncio.open_unix_connection(running.socket, limit=MAX_LINE)
        request = {"token": running.token, "fingerprint": digest, "question": question,
                   "history": to_wire(list(turns))}  # fmt: skip
        writer.write(encode(request))
        await writer.drain()
        reply = json.loads(await reader.readline() or b"{}")
    except (OSError, ValueError) as error:
        emit(Notice(f"{running.line} is not answering ({error}): answering here"))
        return None
    if reply.get("accepted") is not True:
        writer.close()
        why = one_line(str(reply.get("refused", "no reason given")))
        emit(Notice(f"{running.line} did not take the question ({why}): answering here"))
        return None
    emit(Notice(f"answered by {running.line}: its models are loaded"))
    return Call(running, reader, writer)
