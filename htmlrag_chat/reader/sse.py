"""Server-sent events from a reader server, read within bounds that ``max_tokens`` sets.

A server is trusted to stop at ``max_tokens``, but nothing makes it: one that ignores the
limit streams forever, and one that never ends a ``data:`` line makes a reader that waits for
the line's end hold all of it (gigabytes within a minute). So an answer is read against
``StreamLimits``, all derived from the tokens asked for:

- ``chars``: the answer's text. No tokenizer's token is anywhere near ``CHARS_PER_TOKEN``
  characters on average, so an answer longer than that went on past ``max_tokens``.
- ``event_bytes``: one event (its ``data:`` lines together) as sent, which may carry the
  whole answer at once, JSON-escaped (``\\u4e2d``: six bytes a character), plus its envelope.
- ``total_bytes``: everything the server sends for one answer, so that comments, empty
  deltas or usage chunks without end stop too.

The limits are generous: only a server that is broken or hostile reaches one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

CHARS_PER_TOKEN = 64
ENVELOPE_BYTES = 64 << 10  # an event's JSON around its text (ids, model, usage, timings)
BYTES_PER_TOKEN = 4 << 10  # one event per token, its envelope included


@dataclass(frozen=True)
class StreamLimits:
    chars: int
    event_bytes: int
    total_bytes: int


def stream_limits(max_tokens: int) -> StreamLimits:
    """The bounds on an answer of at most ``max_tokens`` tokens."""
    chars = CHARS_PER_TOKEN * max(max_tokens, 1)
    event = 6 * chars + ENVELOPE_BYTES
    return StreamLimits(chars, event, BYTES_PER_TOKEN * max(max_tokens, 1) + event)


class TooLong(Exception):
    """The server sent more than the limits allow; the message says what, in one line."""


async def capped(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[bytes]:
    """The chunks, until more than ``limit`` bytes came in all (then ``TooLong``)."""
    received = 0
    async for chunk in chunks:
        received += len(chunk)
        if received > limit:
            raise TooLong(f"sent more than {limit:,} bytes for one answer")
        yield chunk


async def lines(chunks: AsyncIterator[bytes], limit: int) -> AsyncIterator[str]:
    """Text lines (LF or CRLF) from network chunks that split lines, and UTF-8 characters,
    anywhere; a line longer than ``limit`` bytes is ``TooLong`` as soon as it is.

    Not aiohttp's own line iteration: its line-length limit varies across versions, and
    one event may carry a long answer.
    """
    pending: list[bytes] = []
    size = 0
    async for chunk in chunks:
        first, *rest = chunk.split(b"\n")
        pending.append(first)
        size += len(first)
        for piece in rest:
            _check(size, limit)
            yield b"".join(pending).removesuffix(b"\r").decode(errors="replace")
            pending, size = [piece], len(piece)
        _check(size, limit)
    tail = b"".join(pending)
    if tail:
        yield tail.removesuffix(b"\r").decode(errors="replace")


async def events(lines: AsyncIterator[str], limit: int) -> AsyncIterator[str]:
    """The data of each server-sent event, as the SSE spec assembles it: ``data:`` lines
    add up until a blank line, to at most ``limit`` characters. Comments (``:``) and
    ``event:``, ``id:`` and ``retry:`` lines carry nothing a reader needs."""
    data: list[str] = []
    size = 0
    async for line in lines:
        if line.startswith("data:"):
            data.append(line.removeprefix("data:").removeprefix(" "))
            size += len(data[-1]) + 1
            _check(size, limit)
        elif not line and data:
            yield "\n".join(data)
            data, size = [], 0
    if data:  # a last event without its blank line: the spec drops it, a lenient reader not
        yield "\n".join(data)


def _check(size: int, limit: int) -> None:
    if size > limit:
        raise TooLong(f"sent an event longer than {limit:,} bytes")
