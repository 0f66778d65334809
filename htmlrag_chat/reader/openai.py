"""Any OpenAI-compatible chat server as a reader: Ollama, llama.cpp's server, vLLM, LM Studio.

They all speak one wire protocol: ``POST {base}/chat/completions`` with ``"stream": true``,
answered with server-sent events, one JSON chunk per ``data:`` line, up to ``data: [DONE]``.
Some servers ignore ``stream`` and answer with one JSON completion; the Content-Type says
which came back.

The server is whatever the user configured, so loopback and private addresses are fine here
(pages from the web go through the guard instead). A session lives for one answer: there is
nothing to close between answers, and leaving ``stream`` early (cancellation or ``aclose``)
closes the connection, which is how a server learns to stop generating.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.received import Halves, loads
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.reader import CallStats, Message, ReaderFailed
from htmlrag_chat.reader.sse import StreamLimits, TooLong, capped, events, lines, stream_limits
from htmlrag_chat.reader.think import OPEN, opened_by_template
from htmlrag_chat.reader.verdict import from_reply, from_top

CONNECT_SECONDS = 10.0
_SNIPPET_CHARS = 200  # of an error body or a malformed event, enough to recognise it
_ERROR_BYTES = 64 << 10  # of an error body read: its JSON message is near the start
_EVENT_STREAM = "text/event-stream"
_JSON = "application/json"
TRUNCATED_SHARE = 0.8  # a server that read less than this share of the prompt cut it
TOP_LOGPROBS = 10  # a judge's first token: Yes and No are among the likeliest ten
_VERDICT_BYTES = 256 << 10  # a one-token completion with its log-probabilities


@dataclass
class OpenAIChat:
    """A ``ChatModel`` served over the OpenAI chat-completions API.

    ``timeout`` bounds the wait for each piece of the answer, not the whole answer: a long
    answer may stream for minutes, but a server that goes quiet for ``timeout`` seconds has
    hung.
    """

    base_url: str  # e.g. http://localhost:11434/v1 (Ollama); a trailing slash is fine
    model: str
    api_key: str | None = None
    timeout: float = 120.0
    temperature: float = 0.0
    context_tokens: int | None = None
    llama_cpp: bool = False  # llama.cpp's server: ask it to keep the prompt's cache
    calls: list[CallStats] = field(default_factory=list)  # what the server said it read
    counter: TokenCounter | None = None  # the prompt's tokens as sent, to compare
    warn: Callable[[str], None] | None = None  # told when the server read fewer
    # Whether the model's chat template opens a think block, so that its replies begin
    # with reasoning and no opening tag (None: judged by the model's name).
    reasoning_first: bool | None = None
    _reported: int | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.model

    @property
    def parameters(self) -> int | None:
        return None  # a server does not say

    def pending_tokens(self, messages: Sequence[Message]) -> int | None:
        return None  # the server's prefix cache decides

    def identity(self) -> dict[str, str]:
        """The server's address: its weights cannot be read, so its model's name and where
        it is served stand for them."""
        return {"base_url": self.base_url}

    def forget(self) -> None:
        """Nothing to drop here: the server keeps its own cache."""

    @property
    def endpoint(self) -> str:
        return f"{self.base_url.rstrip('/')}/chat/completions"

    async def stream(self, messages: Sequence[Message], max_tokens: int) -> AsyncIterator[str]:
        """The reply to ``messages`` as the server streams it, in non-empty text chunks.

        Every network or server problem becomes a one-line ``ReaderFailed`` naming the
        server, its own words made safe to print; the ``async with`` blocks close the
        connection however the caller leaves. What the server sends is bounded
        (``sse.stream_limits``): past the answer's characters the reply is cut there and
        ``warn`` says so; an event or a whole reply past its bytes fails.
        """
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS, sock_read=self.timeout)
        limits = stream_limits(max_tokens)
        self._reported = None
        opened = self.reasoning_first
        if opened if opened is not None else opened_by_template(self.model):
            yield OPEN  # what the template wrote, for the think filter to read
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.post(
                    self.endpoint, json=self._body(messages, max_tokens), headers=self._headers()
                ) as response,
            ):
                await self._check_response(response)
                left = limits.chars
                async for content in self._contents(response, limits):
                    shown = content[:left]
                    left -= len(shown)
                    if shown:
                        yield shown
                    if left <= 0:
                        if self.warn is not None:
                            self.warn(
                                f"{self.model} went on past max_tokens ({max_tokens}): its "
                                f"answer was cut at {limits.chars:,} characters"
                            )
                        return
        except TooLong as error:
            raise ReaderFailed(f"{self.endpoint} {error}") from None
        except (TimeoutError, aiohttp.ClientError) as error:
            raise ReaderFailed(self._describe(error)) from error
        self._check_truncation(messages)

    async def yes_probabilities(self, prompts: Sequence[Sequence[Message]]) -> list[float | None]:
        """For each prompt, the probability that the reply starts with Yes rather than No:
        from the first token's ``top_logprobs`` where the server gives them (llama.cpp,
        vLLM, OpenAI), else its one-token reply read as 1 or 0. One request a prompt, in
        order, so that a server's prefix cache serves each after the answer's prompt."""
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_SECONDS, sock_read=self.timeout)
        verdicts: list[float | None] = []
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                for messages in prompts:
                    body = self._body(messages, 1) | {
                        "stream": False,
                        "logprobs": True,
                        "top_logprobs": TOP_LOGPROBS,
                    }
                    body.pop("stream_options")
                    async with session.post(
                        self.endpoint, json=body, headers=self._headers()
                    ) as response:
                        await self._check_response(response)
                        event = self._parse(await _read(response, _VERDICT_BYTES))
                    verdicts.append(_verdict(event))
        except TooLong as error:
            raise ReaderFailed(f"{self.endpoint} {error}") from None
        except (TimeoutError, aiohttp.ClientError) as error:
            raise ReaderFailed(self._describe(error)) from error
        return verdicts

    async def _contents(
        self, response: aiohttp.ClientResponse, limits: StreamLimits
    ) -> AsyncIterator[str]:
        """The text of a whole JSON completion, or of each streamed chunk, counting usage;
        surrogate halves that a server split between two chunks are joined (``Halves``)."""
        if response.content_type == _JSON:
            event = self._parse(await _read(response, limits.event_bytes))
            self._count(event)
            content = _content(event, "message")
            if content:
                yield content
            return
        halves = Halves()
        chunks = capped(response.content.iter_any(), limits.total_bytes)
        async for data in events(lines(chunks, limits.event_bytes), limits.event_bytes):
            if data == "[DONE]":
                break
            event = self._parse(data, whole=False)
            self._count(event)
            content = halves.feed(_content(event, "delta") or "")
            if content:
                yield content
        if rest := halves.finish():
            yield rest

    def _check_truncation(self, messages: Sequence[Message]) -> None:
        """Ollama cuts a prompt longer than its window without a word; the usage it
        reports is the only sign. A server that read well under what was sent is named."""
        if self._reported is None or self.counter is None or self.warn is None:
            return
        sent = sum(self.counter.count(message.content) for message in messages)
        if self._reported < TRUNCATED_SHARE * sent:
            self.warn(
                f"{self.model} read {self._reported:,} prompt tokens of about {sent:,} sent: "
                "its context window cut the sources off (raise it on the server, e.g. "
                "num_ctx, or lower --budget)"
            )

    def _body(self, messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
        body = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},  # the prompt tokens it really read
            "max_tokens": max_tokens,
            "temperature": self.temperature,
        }
        if self.llama_cpp:  # every call continues the last (reader/layout.py): reuse its KV
            body["cache_prompt"] = True
        return body

    def _count(self, event: Any) -> None:
        """The usage a stream ends with (``prompt_tokens``), and llama.cpp's ``timings``:
        ``prompt_n`` tokens evaluated of ``prompt_n + cache_n``, ``predicted_n`` generated."""
        usage = event.get("usage") if isinstance(event, dict) else None
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            self._reported = usage["prompt_tokens"]
        timings = event.get("timings") if isinstance(event, dict) else None
        if isinstance(timings, dict) and isinstance(timings.get("prompt_n"), int):
            evaluated = timings["prompt_n"]
            cached, generated = (_count_of(timings, key) for key in ("cache_n", "predicted_n"))
            self.calls.append(CallStats(evaluated + cached, evaluated, generated))

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": f"{_EVENT_STREAM}, {_JSON}"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    async def _check_response(self, response: aiohttp.ClientResponse) -> None:
        """Refuse an HTTP error with the server's own words (Ollama's 404 for a model that
        was never pulled says exactly that), and anything that is neither an event stream
        nor JSON, such as a web UI's HTML page answering at a wrong base URL."""
        if response.status >= 400:
            body = await _read(response, _ERROR_BYTES, cut=True)
            raise ReaderFailed(f"{self.endpoint}: HTTP {response.status}: {_error_message(body)}")
        if response.content_type not in (_EVENT_STREAM, _JSON):
            raise ReaderFailed(
                f"{self.endpoint}: answered with {one_line(response.content_type)[:80]}, not an"
                " event stream (is this the /v1 URL of an OpenAI-compatible server?)"
            )

    def _parse(self, data: bytes | str, whole: bool = True) -> Any:
        """One JSON completion or chunk (``received.loads``: its text made whole unless
        ``whole`` is False); an error object sent in place of one (vLLM and llama.cpp
        report failures mid-stream like this) is raised."""
        try:
            event = loads(data, whole)
        except ValueError:
            text = data if isinstance(data, str) else data.decode(errors="replace")
            snippet = one_line(text[: _SNIPPET_CHARS * 4])[:_SNIPPET_CHARS]
            raise ReaderFailed(f"{self.endpoint} sent malformed JSON: {snippet}") from None
        if isinstance(event, dict) and "error" in event:
            message = one_line(_json_error(event) or "")[:_SNIPPET_CHARS]
            raise ReaderFailed(f"{self.endpoint}: {message or 'the server failed'}")
        return event

    def _describe(self, error: BaseException) -> str:
        """One line on a network failure, saying what to check."""
        url = self.endpoint
        unreachable = f"cannot reach the reader server at {url}"
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            return f"{unreachable}: no connection within {CONNECT_SECONDS:g} s (is it running?)"
        if isinstance(error, TimeoutError):
            return f"{url} did not answer within {self.timeout:g} s"
        if isinstance(error, aiohttp.ClientConnectorDNSError):
            return f"{unreachable}: unknown host {error.host} (is the URL right?)"
        if isinstance(error, aiohttp.ClientConnectorError):
            return f"{unreachable}: {_connect_reason(error.os_error)} (is it running?)"
        if isinstance(error, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
            return f"{url} is not an http:// or https:// URL"
        if isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError)):
            return f"{url} closed the connection mid-answer"
        return f"{url}: {one_line(str(error))[:_SNIPPET_CHARS] or type(error).__name__}"


async def _read(response: aiohttp.ClientResponse, limit: int, cut: bool = False) -> bytes:
    """The body, up to ``limit`` bytes: beyond, cut there (``cut``: an error body, of which
    only the start is shown) or ``TooLong``."""
    body = bytearray()
    async for chunk in response.content.iter_any():
        body += chunk
        if len(body) > limit:
            if cut:
                return bytes(body[:limit])
            raise TooLong(f"sent a reply longer than {limit:,} bytes")
    return bytes(body)


def _count_of(timings: dict[str, Any], key: str) -> int:
    """A count in llama.cpp's ``timings``, 0 where it is missing or not a number."""
    value = timings.get(key)
    return value if isinstance(value, int) else 0


def _content(event: Any, key: str) -> str | None:
    """``choices[0][key].content`` when it is text: ``delta`` for a streamed chunk, where
    role-only deltas, usage chunks and ``reasoning_content`` carry none; ``message`` for a
    whole completion."""
    try:
        content = event["choices"][0][key]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _verdict(event: Any) -> float | None:
    """A one-token completion as a verdict: its ``top_logprobs``, else its text."""
    try:
        top = event["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
        found = from_top((str(c["token"]), float(c["logprob"])) for c in top if isinstance(c, dict))
    except (KeyError, IndexError, TypeError, ValueError):
        found = None
    if found is not None:
        return found
    text = _content(event, "message")
    return from_reply(text) if text else None


def _error_message(body: bytes) -> str:
    """The server's own error message from an error body: JSON ``{"error": {"message"}}``
    (OpenAI, Ollama, llama.cpp), ``{"error": "..."}`` or ``{"message": ...}`` (older vLLM);
    otherwise the start of the body itself."""
    text = body.decode(errors="replace")
    try:
        data = loads(text)
    except ValueError:
        data = None
    message = _json_error(data) if isinstance(data, dict) else None
    return one_line((message or text)[: _SNIPPET_CHARS * 4])[:_SNIPPET_CHARS] or "(empty body)"


def _json_error(data: dict[str, Any]) -> str | None:
    error = data.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error.strip():
        return error
    message = data.get("message")
    return message if isinstance(message, str) else None


def _connect_reason(error: OSError) -> str:
    """Why a connection failed, in words: asyncio phrases a refusal as "Connect call failed
    ('127.0.0.1', 11434)", while its errno says "connection refused"."""
    if error.errno and not isinstance(error, ssl.SSLError):
        return os.strerror(error.errno).lower()
    return one_line(str(error)) or "cannot connect"
