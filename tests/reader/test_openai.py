"""The OpenAI-compatible reader against a scripted server on loopback: real HTTP, real
server-sent events, and each way a local LLM server goes wrong."""

from __future__ import annotations

import asyncio
import json
import re
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from aiohttp import ClientSession, web

from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.reader import Message, ReaderFailed
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.sse import stream_limits
from htmlrag_chat.reader.think import OPEN
from tests.loopback import serve_bytes, unused_port
from tests.openai_server import ScriptedLLM, serve_llm

MODEL = "otter-7b"
MESSAGES = [
    Message("system", "Answer from the sources, citing them as [n]."),
    Message("user", "Where do otters live?"),
]
REPLY = "Otters live in rivers, lakes and along coasts [1], and sea otters in kelp forests [2]."


def said(text: str) -> Callable[[list[dict[str, Any]]], str]:
    return lambda messages: text


def stream(
    llm: ScriptedLLM,
    max_tokens: int = 64,
    model_name: str = MODEL,
    guard: float | None = None,
    **options: Any,
) -> list[str]:
    """The chunks ``OpenAIChat`` yields from a fresh server running ``llm``; ``guard``:
    seconds after which a hung test fails instead of hanging."""

    async def main() -> list[str]:
        async with serve_llm(llm) as url:
            chat = OpenAIChat(url, model_name, **options)
            return [chunk async for chunk in chat.stream(MESSAGES, max_tokens)]

    return asyncio.run(asyncio.wait_for(main(), guard))


def failure(llm: ScriptedLLM, **options: Any) -> str:
    with pytest.raises(ReaderFailed) as raised:
        stream(llm, **options)
    message = str(raised.value)
    assert "\n" not in message
    return message


async def first_chunk(chat: OpenAIChat) -> str:
    return await anext(chat.stream(MESSAGES, 64))


async def until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), seconds)


def test_a_streamed_reply_arrives_in_chunks_that_add_up_to_it() -> None:
    chunks = stream(ScriptedLLM(reply=said(REPLY)))
    assert len(chunks) > 5
    assert all(chunks)
    assert "".join(chunks) == REPLY


@pytest.mark.parametrize("slash", ["", "/"])
def test_the_request_carries_model_messages_and_limits(slash: str) -> None:
    llm = ScriptedLLM(reply=lambda messages: f"You asked: {messages[-1]['content']}")

    async def main() -> list[str]:
        async with serve_llm(llm) as url:
            chat = OpenAIChat(url + slash, MODEL, temperature=0.3)
            assert chat.name == MODEL
            return [chunk async for chunk in chat.stream(MESSAGES, 321)]

    assert "".join(asyncio.run(main())) == "You asked: Where do otters live?"
    assert llm.requests == [
        {
            "model": MODEL,
            "messages": [
                {"role": "system", "content": MESSAGES[0].content},
                {"role": "user", "content": MESSAGES[1].content},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": 321,
            "temperature": 0.3,
        }
    ]


def test_the_scripted_server_lists_its_model() -> None:
    async def main() -> dict[str, Any]:
        async with (
            serve_llm(ScriptedLLM(reply=said(REPLY), model=MODEL)) as url,
            ClientSession() as session,
            session.get(f"{url}/models") as response,
        ):
            return await response.json()

    assert [model["id"] for model in asyncio.run(main())["data"]] == [MODEL]


def test_the_api_key_goes_in_a_bearer_header() -> None:
    llm = ScriptedLLM(reply=said(REPLY))
    stream(llm, api_key="sk-local-123")
    stream(llm)
    assert llm.headers[0]["authorization"] == "Bearer sk-local-123"
    assert "authorization" not in llm.headers[1]


def test_a_server_that_ignores_stream_answers_with_one_completion() -> None:
    assert stream(ScriptedLLM(reply=said(REPLY), streamed=False)) == [REPLY]


def test_crlf_line_endings_parse() -> None:
    assert "".join(stream(ScriptedLLM(reply=said(REPLY), newline="\r\n"))) == REPLY


def test_lines_and_characters_split_across_network_chunks_reassemble() -> None:
    # A two-byte "é" at each offset of a five-byte write: at least one is cut in two.
    reply = "Les loutres 🦦 de Skagen: é aé oué ouaé ouaié, café crème."
    llm = ScriptedLLM(reply=said(reply), write_size=5, chunk_delay=0.001)
    assert "".join(stream(llm)) == reply


def test_a_line_longer_than_aiohttps_line_limit_parses() -> None:
    reply = "otter" * 20_000  # one word, so one 100 kB data line (aiohttp's limit: 64 kB)
    assert stream(ScriptedLLM(reply=said(reply)), max_tokens=2048) == [reply]


def test_comments_event_lines_and_contentless_deltas_are_skipped() -> None:
    preamble = [
        ": keep-alive",
        "event: message",
        "id: 1",
        "retry: 1000",
        "",
        'data: {"choices": [{"index": 0, "delta": {"reasoning_content": "Hmm, otters."}}]}',
        "",
        'data: {"choices": [{"index": 0, "delta": {"content": null}}]}',
        "",
        'data: {"choices": [], "usage": {"completion_tokens": 0}}',
        "",
    ]
    assert "".join(stream(ScriptedLLM(reply=said(REPLY), preamble=preamble))) == REPLY


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (  # Ollama and llama.cpp, OpenAI style
            {
                "error": {
                    "message": f'model "{MODEL}" not found, try pulling it first',
                    "type": "api_error",
                    "param": None,
                    "code": None,
                }
            },
            f'HTTP 404: model "{MODEL}" not found, try pulling it first',
        ),
        ({"error": f"model '{MODEL}' not found"}, f"HTTP 404: model '{MODEL}' not found"),
        ("404 page not found\n", "HTTP 404: 404 page not found"),
    ],
)
def test_an_http_error_keeps_the_servers_message(body: dict[str, Any] | str, expected: str) -> None:
    message = failure(ScriptedLLM(reply=said(REPLY), status=404, error_body=body))
    assert message.startswith("http://127.0.0.1:")
    assert message.endswith(f"/v1/chat/completions: {expected}")


def test_an_error_event_mid_stream_fails_with_its_message() -> None:
    preamble = ['data: {"error": {"message": "CUDA out of memory", "code": 500}}', ""]
    message = failure(ScriptedLLM(reply=said(REPLY), preamble=preamble))
    assert message.endswith("/v1/chat/completions: CUDA out of memory")


def test_a_malformed_data_line_fails() -> None:
    message = failure(ScriptedLLM(reply=said(REPLY), preamble=["data: {oops", ""]))
    assert "sent malformed JSON: {oops" in message


def test_a_refused_connection_fails_at_once_and_says_so() -> None:
    """A refusal is final: no retry, no wait for the (hour-long) timeout; a reader that
    waited would trip the 60 s guard, far from either, however loaded the machine."""
    url = f"http://127.0.0.1:{unused_port()}/v1"
    with pytest.raises(ReaderFailed) as raised:
        asyncio.run(asyncio.wait_for(first_chunk(OpenAIChat(url, MODEL, timeout=3600)), 60))
    assert str(raised.value) == (
        f"cannot reach the reader server at {url}/chat/completions: connection refused"
        " (is it running?)"
    )


def test_a_url_without_a_scheme_fails_with_a_clear_line() -> None:
    with pytest.raises(ReaderFailed, match=r"^localhost:11434/v1/chat/completions is not an http"):
        asyncio.run(first_chunk(OpenAIChat("localhost:11434/v1", MODEL)))


def test_a_server_that_stalls_longer_than_the_timeout_fails() -> None:
    """Its first event would come in an hour: the reader gives up at its timeout (one that
    waited would trip the 60 s guard instead)."""
    llm = ScriptedLLM(reply=said(REPLY), chunk_delay=3600)
    message = failure(llm, timeout=0.2, guard=60)
    assert message.endswith("/v1/chat/completions did not answer within 0.2 s")


def test_the_timeout_bounds_each_chunk_not_the_whole_answer() -> None:
    """Each event comes 0.1 s after the last, ten times inside the 1 s timeout, while the
    whole answer takes longer than the timeout (by the server's own sleeps)."""
    llm = ScriptedLLM(reply=said(REPLY), chunk_delay=0.1)
    chunks = stream(llm, timeout=1.0)
    assert "".join(chunks) == REPLY
    assert len(chunks) * llm.chunk_delay > 1.0  # a timeout on the whole would have fired


def test_an_html_page_at_the_url_is_refused() -> None:
    """A web UI answering every path with its page, as at a base URL missing ``/v1``."""

    async def page(request: web.Request) -> web.Response:
        return web.Response(text="<html><body>Open WebUI</body></html>", content_type="text/html")

    async def main() -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", page)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            await first_chunk(OpenAIChat(url, MODEL))
        finally:
            await runner.cleanup()

    with pytest.raises(ReaderFailed, match="answered with text/html, not an event stream"):
        asyncio.run(main())


def test_cancelling_the_consumer_hangs_up_on_the_server_promptly() -> None:
    llm = ScriptedLLM(reply=said(REPLY), hang_after=2)
    received: list[str] = []

    async def consume(url: str) -> None:
        async for chunk in OpenAIChat(url, MODEL).stream(MESSAGES, 64):
            received.append(chunk)

    async def main() -> None:
        async with serve_llm(llm) as url:
            task = asyncio.create_task(consume(url))
            await until(lambda: len(received) == 2)
            await asyncio.sleep(0.05)  # the server is stalled now, the client waiting
            assert not llm.disconnected.is_set()
            task.cancel()
            # The stall never ends by itself: the task ends because the cancel reached it.
            with pytest.raises(asyncio.CancelledError):
                await asyncio.wait_for(task, 60)
            await asyncio.wait_for(llm.disconnected.wait(), 60)

    asyncio.run(main())
    assert received == ["Otters ", "live "]


def test_closing_the_stream_early_hangs_up_on_the_server() -> None:
    llm = ScriptedLLM(reply=said(REPLY), hang_after=1)

    async def main() -> str:
        async with serve_llm(llm) as url:
            chunks = OpenAIChat(url, MODEL).stream(MESSAGES, 64)
            first = await anext(chunks)
            await chunks.aclose()  # an async generator's, as ``async for`` leaves it on break
            await asyncio.wait_for(llm.disconnected.wait(), 60)
            return first

    assert asyncio.run(main()) == "Otters "


def test_a_server_that_read_fewer_prompt_tokens_than_sent_is_named() -> None:
    """Ollama cuts a prompt to its window without a word; its usage says how much it read."""
    long = [Message("user", "otters live in rivers and along coasts " * 300)]
    warnings: list[str] = []

    async def ask(messages: list[Message]) -> None:
        async with serve_llm(ScriptedLLM(reply=said("Rivers [1]."), prompt_tokens=2048)) as url:
            chat = OpenAIChat(url, MODEL, counter=ApproxTokenCounter(), warn=warnings.append)
            assert "".join([c async for c in chat.stream(messages, 16)]) == "Rivers [1]."

    asyncio.run(ask(long))
    [warning] = warnings
    assert warning.startswith(f"{MODEL} read 2,048 prompt tokens of about ")
    assert "lower --budget" in warning
    asyncio.run(ask(MESSAGES))  # a short prompt, read whole: nothing to say
    assert len(warnings) == 1


def test_llama_cpp_is_asked_to_keep_the_prompt_cache() -> None:
    llm = ScriptedLLM(reply=said("Rivers."))

    async def ask(llama_cpp: bool) -> None:
        async with serve_llm(llm) as url:
            chat = OpenAIChat(url, MODEL, llama_cpp=llama_cpp)
            assert [c async for c in chat.stream(MESSAGES, 8)]

    asyncio.run(ask(True))
    asyncio.run(ask(False))  # other servers are not sent what they may not know
    assert [body.get("cache_prompt") for body in llm.requests] == [True, None]


# What a hostile or broken server may put in its words: a window title (OSC 0), a clear
# screen and colours (CSI), a hidden link (OSC 8), and their one-character C1 forms.
HOSTILE = (
    "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x1b[0m \x1b]8;;https://evil.example/\x1b\\click"
    "\x1b]8;;\x1b\\ \x9b2J \x9d0;title\x9c done"
)
CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


def clean(message: str) -> str:
    """The message, once it is known to carry no control character at all."""
    assert not CONTROLS.search(message), repr(message)
    return message


@pytest.mark.parametrize(
    "llm",
    [
        ScriptedLLM(reply=said(REPLY), status=500, error_body={"error": {"message": HOSTILE}}),
        ScriptedLLM(reply=said(REPLY), status=500, error_body={"error": HOSTILE}),
        ScriptedLLM(reply=said(REPLY), status=502, error_body=HOSTILE),
        ScriptedLLM(reply=said(REPLY), preamble=[f"data: {json.dumps({'error': HOSTILE})}", ""]),
        ScriptedLLM(reply=said(REPLY), preamble=[f"data: {HOSTILE}", ""]),
    ],
    ids=["error-message", "error-string", "text-body", "error-event", "not-json"],
)
def test_escape_sequences_from_the_server_never_reach_a_failure_line(llm: ScriptedLLM) -> None:
    message = clean(failure(llm))
    assert message.startswith("http://127.0.0.1:")
    assert "owned" in message and "done" in message  # the server's words, made inert


def raw_failure(answer: bytes) -> str:
    """The failure line of a reader whose server answers with exactly ``answer``."""

    async def main() -> None:
        async with serve_bytes(lambda: answer) as port:
            await first_chunk(OpenAIChat(f"http://127.0.0.1:{port}/v1", MODEL))

    with pytest.raises(ReaderFailed) as raised:
        asyncio.run(main())
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_escape_sequences_in_the_content_type_never_reach_the_failure_line() -> None:
    # aiohttp refuses to send such a header, but reads one: a raw server sends it.
    header = "text/" + HOSTILE.replace("\x9b", "").replace("\x9d", "").replace("\x9c", "")
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: " + header.encode("latin-1")
    message = clean(raw_failure(answer + b"\r\nContent-Length: 2\r\n\r\nhi"))
    assert "answered with text/" in message


def with_peak_memory(work: Callable[[], str]) -> tuple[str, int]:
    """What ``work`` returns, and the most memory Python held while it ran."""
    tracemalloc.start()
    try:
        return work(), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_error_body_is_read_only_as_far_as_it_is_shown() -> None:
    body = b"the model is not loaded " + b"x" * (64 << 20)  # made before memory is traced
    llm = ScriptedLLM(reply=said(REPLY), status=503, error_body=body)
    message, peak = with_peak_memory(lambda: failure(llm))
    assert "HTTP 503: the model is not loaded x" in message and len(message) < 400
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB"


def test_a_server_that_ignores_max_tokens_is_stopped_with_a_note() -> None:
    """Words until the client hangs up (or 200,000 of them): the answer stops at what
    ``max_tokens`` could ever need, and one line says why."""
    notes: list[str] = []
    llm = ScriptedLLM(reply=said(REPLY), forever=200_000)

    async def main() -> str:
        async with serve_llm(llm) as url:
            chat = OpenAIChat(url, MODEL, warn=notes.append)
            answer = "".join([chunk async for chunk in chat.stream(MESSAGES, 64)])
            await asyncio.wait_for(llm.disconnected.wait(), 60)  # it hung up on the server
            return answer

    answer = asyncio.run(main())
    assert answer.startswith(REPLY) and len(answer) == stream_limits(64).chars
    (note,) = notes
    assert "\n" not in note and "max_tokens" in note and MODEL in note


def test_one_endless_data_line_fails_with_memory_bounded() -> None:
    """A ``data:`` line that never ends (64 MiB here, then the server stops): refused once
    it is longer than any event can be, before it fills the memory."""
    llm = ScriptedLLM(reply=said(REPLY), endless_line=64 << 20)
    message, peak = with_peak_memory(lambda: failure(llm, max_tokens=64))
    assert "sent an event longer than" in message
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB"


def test_a_model_whose_template_opens_a_think_block_streams_the_tag_first() -> None:
    """DeepSeek-R1's template wrote ``<think>``, so its reply starts inside the block: the
    reader says so, by the model's name, unless told otherwise."""
    reply = "The user asks... </think>Otters live in rivers [1]."
    assert stream(ScriptedLLM(reply=said(reply)), model_name="deepseek-r1:7b")[0] == OPEN
    assert stream(ScriptedLLM(reply=said(reply)), model_name="llama3.1:8b")[0] != OPEN
    told = stream(ScriptedLLM(reply=said(reply)), model_name="deepseek-r1", reasoning_first=False)
    assert "".join(told) == reply


def test_the_judge_reads_a_bare_yes_or_no_from_a_server_without_logprobs() -> None:
    llm = ScriptedLLM(said("No, it does not."))

    async def run() -> list[float | None]:
        async with serve_llm(llm) as base_url:
            chat = OpenAIChat(base_url, llm.model)
            return await chat.yes_probabilities([[Message("user", "Does it? Yes or No.")]] * 2)

    assert asyncio.run(run()) == [0.0, 0.0]
    [body, _] = llm.requests
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["stream"] is False


def test_utf16_halves_split_between_deltas_are_joined_and_lone_ones_replaced() -> None:
    """A server cutting by UTF-16 units sends "😀" as ``"\\ud83d"`` then ``"\\ude00"``; the
    halves pair up again here, and a half with no partner becomes U+FFFD."""
    reply = "Otters 😀 float [1]. A lone \ud83d half, and \ude00 another 😀"
    expected = "Otters 😀 float [1]. A lone \ufffd half, and \ufffd another 😀"
    chunks = stream(ScriptedLLM(said(reply), utf16=True))
    assert "".join(chunks) == expected and len(chunks) > 5
    assert all(chunk.encode("utf-8") for chunk in chunks)  # each one printable as it comes
    whole = stream(ScriptedLLM(said(reply), utf16=True, streamed=False))
    assert "".join(whole) == expected


def test_half_a_pair_in_an_error_event_stays_one_printable_line() -> None:
    body = {"error": {"message": "model otter-\ud83d is not loaded"}}
    message = failure(ScriptedLLM(said(REPLY), status=404, error_body=body))
    assert message.endswith("HTTP 404: model otter-\ufffd is not loaded")
    message.encode("utf-8")


def test_an_event_nested_deeper_than_the_recursion_limit_is_malformed() -> None:
    message = failure(ScriptedLLM(said(REPLY), preamble=["data: " + "[" * 20_000, ""]))
    assert "sent malformed JSON: [[[" in message
