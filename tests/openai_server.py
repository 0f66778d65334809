"""A scripted OpenAI-compatible chat server: the edge of the world for reader and agent tests.

No real LLM server runs here. ``ScriptedLLM`` answers from a script (a function of the
request's messages) but speaks the real wire protocol over real loopback sockets: JSON
requests to ``POST /v1/chat/completions``, answers as server-sent events chunked the way
Ollama, llama.cpp and vLLM chunk them (a role-only delta, content deltas, a ``finish_reason``
chunk, ``data: [DONE]``), or as one JSON completion. Its knobs make it misbehave the way real
servers do: slowly, stalling mid-answer, with HTTP errors, CRLF line endings, odd lines, or
writes that split lines and characters.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.loopback import serve_app


@dataclass
class ScriptedLLM:
    """What the server answers and how, and what it saw.

    ``reply`` gets the request's messages (``{"role", "content"}`` dicts) and returns the
    whole reply text; streamed, it arrives word by word (each word with the spaces after it,
    so the chunks add up to exactly the reply).
    """

    reply: Callable[[list[dict[str, Any]]], str]
    model: str = "scripted-llm"  # what GET /v1/models lists
    also_listed: Sequence[str] = ()  # more models it lists (Ollama lists every one pulled)
    owned_by: str = "tests"  # what the listing says (vLLM says "vllm", llama.cpp "llamacpp")
    chunk_delay: float = 0.0  # seconds before each write
    hang_after: int | None = None  # stall forever after this many content chunks
    status: int = 200  # >= 400: answer with this error instead
    # JSON, text or bytes as they are; None: an OpenAI-style error
    error_body: dict[str, Any] | str | bytes | None = None
    streamed: bool = True  # False: one JSON completion, even when asked to stream
    newline: str = "\n"  # "\r\n" for a server that ends its lines the HTTP way
    preamble: Sequence[str] = ()  # raw lines sent before the first event
    write_size: int | None = None  # split each event into writes of this many bytes
    # The prompt tokens a final usage chunk reports when the client asks for it
    # (``stream_options.include_usage``), as Ollama does after cutting a prompt to its window.
    prompt_tokens: int | None = None
    # A server that ignores max_tokens: the reply again and again, this many words in all
    # (or until the client hangs up).
    forever: int | None = None
    # A server that sends one ``data:`` line of this many bytes, never ending it.
    endless_line: int | None = None
    content_type: str = "text/event-stream"  # what the stream's header says it is
    # A server that cuts its text by UTF-16 units and escapes it as JSON does: a character
    # past U+FFFF goes out as two halves (``"\\ud83d"``, then ``"\\ude00"``) in two deltas,
    # and a lone half in the reply or the model's id goes out as it is.
    utf16: bool = False
    # Awaited with a request's messages before it is answered (a reply that comes late,
    # or not until the test says so); None: at once.
    before: Callable[[list[dict[str, Any]]], Awaitable[None]] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)  # every request body
    headers: list[dict[str, str]] = field(default_factory=list)  # their headers, keys lowercase
    # Set when a client goes away before the answer is complete (not when the server stops).
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    _stopping: bool = field(default=False, init=False, repr=False)


LLM = web.AppKey("llm", ScriptedLLM)


@asynccontextmanager
async def serve_llm(llm: ScriptedLLM) -> AsyncIterator[str]:
    """Run ``llm`` on 127.0.0.1 at a free port; yields its base URL, ending in ``/v1``.

    Handlers are cancelled when their client disconnects, as a real server stops generating.
    """
    llm._stopping = False
    app = web.Application()
    app[LLM] = llm
    app.router.add_post("/v1/chat/completions", _chat_completions)
    app.router.add_get("/v1/models", _models)
    async with serve_app(app) as port:
        try:
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            llm._stopping = True


class ThreadedLLM:
    """``serve_llm`` on its own loop in a thread: for callers that block or run their own
    loop (the CLI's ``main``), and for an app under Pilot whose busy loop must not slow
    the server down (the reader probe waits a fraction of a second)."""

    def __init__(self, llm: ScriptedLLM) -> None:
        self.llm = llm
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def __enter__(self) -> str:
        context = serve_llm(self.llm)
        self.context = context
        return asyncio.run_coroutine_threadsafe(context.__aenter__(), self.loop).result(5)

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(
            self.context.__aexit__(None, None, None), self.loop
        ).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)


async def _models(request: web.Request) -> web.Response:
    llm = request.app[LLM]
    data = [
        {"id": model, "object": "model", "owned_by": llm.owned_by}
        for model in (llm.model, *llm.also_listed)
    ]
    return web.json_response({"object": "list", "data": data})


async def _chat_completions(request: web.Request) -> web.StreamResponse:
    llm = request.app[LLM]
    body = await request.json()
    llm.requests.append(body)
    llm.headers.append({key.lower(): value for key, value in request.headers.items()})
    if llm.status >= 400:
        return await _error(request, llm)
    if llm.before is not None:
        try:
            await llm.before(body["messages"])
        except asyncio.CancelledError:  # the client went away while the reply was held
            llm.disconnected.set()
            raise
    text = llm.reply(body["messages"])
    if not (llm.streamed and body.get("stream")):
        return web.json_response(_completion(body.get("model", llm.model), text))
    try:
        return await _stream(request, llm, body, text)
    except (asyncio.CancelledError, ConnectionResetError):
        if not llm._stopping:
            llm.disconnected.set()
        raise


async def _write_bytes(request: web.Request, status: int, body: bytes) -> web.StreamResponse:
    """``body`` as plain text in 64 KiB writes, so that the server holds no copy of it."""
    response = web.StreamResponse(status=status, headers={"Content-Type": "text/plain"})
    await response.prepare(request)
    view = memoryview(body)
    for start in range(0, len(body), 1 << 16):
        await response.write(view[start : start + (1 << 16)])
    await response.write_eof()
    return response


async def _error(request: web.Request, llm: ScriptedLLM) -> web.StreamResponse:
    body = llm.error_body
    if isinstance(body, str):
        return web.Response(status=llm.status, text=body)
    if isinstance(body, bytes):
        return await _write_bytes(request, llm.status, body)
    if body is None:
        body = {"error": {"message": f"scripted failure {llm.status}", "type": "api_error"}}
    return web.json_response(body, status=llm.status)


async def _stream(
    request: web.Request, llm: ScriptedLLM, body: dict[str, Any], text: str
) -> web.StreamResponse:
    """Send ``text`` as server-sent events: role, content word by word, finish, the usage
    when asked for, [DONE]."""
    model = body.get("model", llm.model)
    response = web.StreamResponse()
    response.headers["Content-Type"] = llm.content_type  # as sent, not parsed by aiohttp
    await response.prepare(request)

    async def send(line: str) -> None:
        data = (line + llm.newline).encode()
        size = llm.write_size or len(data)
        for start in range(0, len(data), size):
            await asyncio.sleep(llm.chunk_delay)
            await response.write(data[start : start + size])

    async def event(delta: dict[str, str], finish_reason: str | None = None) -> None:
        # Raw UTF-8, as Ollama and llama.cpp send it (so a write can split a character);
        # JSON escapes for a server that speaks UTF-16 units.
        chunk = json.dumps(_chunk(model, delta, finish_reason), ensure_ascii=llm.utf16)
        await send(f"data: {chunk}{llm.newline}")

    for line in llm.preamble:
        await send(line)
    if llm.endless_line is not None:
        piece = b"x" * 65536
        await response.write(b"data: ")
        for _ in range(llm.endless_line // len(piece)):
            await response.write(piece)
    await event({"role": "assistant", "content": ""})
    words = re.findall(r"\s+|\S+\s*", text)
    if llm.utf16:
        words = [piece for word in words for piece in _utf16_halves(word)]
    if llm.forever is not None:
        words = [words[n % len(words)] for n in range(llm.forever)]
    for number, word in enumerate(words):
        if number == llm.hang_after:
            await asyncio.Future()  # never done: only a disconnect or shutdown ends this
        await event({"content": word})
    await event({}, "stop")
    if llm.prompt_tokens is not None and (body.get("stream_options") or {}).get("include_usage"):
        usage = {"prompt_tokens": llm.prompt_tokens, "completion_tokens": 1, "total_tokens": 1}
        last = _chunk(model, {}, None) | {"choices": [], "usage": usage}
        await send(f"data: {json.dumps(last)}{llm.newline}")
    await send(f"data: [DONE]{llm.newline}")
    await response.write_eof()
    return response


def _utf16_halves(word: str) -> list[str]:
    """``word`` in UTF-16 units, cut after each high surrogate: "a😀b" -> ["a\\ud83d",
    "\\ude00b"], as a server that counts UTF-16 units may cut a reply between deltas."""
    units = "".join(
        chr(0xD800 + ((ord(char) - 0x10000) >> 10)) + chr(0xDC00 + ((ord(char) - 0x10000) & 0x3FF))
        if ord(char) > 0xFFFF
        else char
        for char in word
    )
    return [piece for piece in re.split("(?<=[\ud800-\udbff])", units) if piece]


def _chunk(model: str, delta: dict[str, str], finish_reason: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


def _completion(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
    }
