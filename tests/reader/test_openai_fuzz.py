"""Fuzzing what a reader server sends back, from real answers of llama-cpp-python's server,
mutated the way broken and hostile servers answer.

The fixtures in ``tests/fixtures/streams`` are what ``python -m llama_cpp.server`` with
SmolLM2-135M-Instruct sent, byte for byte: a streamed answer (server-sent events), a whole
JSON completion, and a 500 error. Each example takes one, mutates it (escape sequences and
controls inside the JSON strings, raw in the body or in the Content-Type, an error event
mid-stream, a truncation, a line repeated, every line break gone, a line longer than any
event, random bytes, another status), serves it from a loopback socket in pieces, and reads
it through the whole answer path (``OpenAIChat`` under ``read_answer``: the think, safety and
citation filters). It asserts:

- no crash: the answer completes, or fails as one ``ReaderFailed`` line;
- no escape sequence, control or bidi override in anything a face would print (the answer
  as it streams, the notes, the failure line);
- bounded output: the answer within ``stream_limits``, the failure line short.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from htmlrag_chat.agent.reading import read_answer
from htmlrag_chat.base.events import AnswerDelta, Event, Notice
from htmlrag_chat.reader import ReaderFailed, Source
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.sse import stream_limits
from tests.loopback import serve_bytes

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE = [
    "\x1b]0;owned\x07",  # window title
    "\x1b[2J\x1b[H",  # clear screen
    "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # hidden link
    "\x9b31m\x9d0;t\x9c",  # the one-character C1 forms
    "\u202eevil\u202c",  # a bidi override
    "\x00\x07\x08\x7f",
]
SOURCES = [
    Source(1, "https://example.org/otters", "Otters", "<p>Otters live in rivers.</p>",
           "Otters live in rivers."),
    Source(2, "https://example.org/coasts", "Coasts", "<p>Sea otters live along coasts.</p>",
           "Sea otters live along coasts."),
]  # fmt: skip


@dataclass
class Answer:
    """An HTTP answer as a server sends it: status, Content-Type, body (sent until close)."""

    status: int
    content_type: bytes
    body: bytes

    def wire(self) -> bytes:
        head = f"HTTP/1.1 {self.status} Whatever\r\n".encode()
        head += b"Content-Type: " + self.content_type + b"\r\nConnection: close\r\n\r\n"
        return head + self.body


def recorded(name: str) -> Answer:
    """A recorded answer, its chunked body joined (it is resent delimited by the close)."""
    head, _, body = (STREAMS / name).read_bytes().partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = dict(line.lower().split(b": ", 1) for line in lines[1:])
    if headers.get(b"transfer-encoding") == b"chunked":
        joined = b""
        while body:
            size, _, body = body.partition(b"\r\n")
            length = int(size, 16)
            joined, body = joined + body[:length], body[length + 2 :]
        body = joined
    return Answer(status, headers[b"content-type"], body)


RECORDED = [recorded(name) for name in ("llama_cpp_stream.http", "llama_cpp_completion.http",
                                         "llama_cpp_error.http")]  # fmt: skip
assert RECORDED[0].body.count(b"data: ") > 10 and RECORDED[2].status == 500

hostile = st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=3).map("".join)


@st.composite
def mutated(draw: st.DrawFn) -> Answer:
    answer = draw(st.sampled_from(RECORDED))
    answer = Answer(answer.status, answer.content_type, answer.body)
    for mutation in draw(st.lists(st.integers(0, 9), min_size=1, max_size=4)):
        body = answer.body
        at = draw(st.integers(0, len(body)))
        if mutation == 0:  # escapes inside the JSON strings, as JSON escapes them
            text = json.dumps(draw(hostile))[1:-1].encode()
            answer.body = re.sub(
                rb'("(?:content|message)": ?")', rb"\1" + text.replace(b"\\", b"\\\\"), body
            )
        elif mutation == 1:  # raw, anywhere
            answer.body = body[:at] + draw(hostile).encode() + body[at:]
        elif mutation == 2:  # an error event
            event = json.dumps({"error": {"message": draw(hostile) + " failed"}})
            answer.body = body[:at] + f"\n\ndata: {event}\n\n".encode() + body[at:]
        elif mutation == 3:
            answer.body = body[:at]
        elif mutation == 4:  # a line repeated
            lines = body.split(b"\n")
            line = draw(st.integers(0, len(lines) - 1))
            lines[line:line] = [lines[line]] * draw(st.integers(1, 300))
            answer.body = b"\n".join(lines)
        elif mutation == 5:
            answer.body = body.replace(b"\n", b"")
        elif mutation == 6:  # one line longer than any event of the answer
            answer.body = body[:at] + b"data: " + b"x" * draw(st.integers(1, 600_000)) + body[at:]
        elif mutation == 7:
            answer.body = body[:at] + draw(st.binary(max_size=64)) + body[at:]
        elif mutation == 8:
            answer.status = draw(st.sampled_from([400, 401, 404, 429, 500, 502, 503]))
        else:
            text = draw(hostile).replace("\x9b31m\x9d0;t\x9c", "")
            answer.content_type = draw(st.sampled_from([b"text/event-stream", b"text/"]))
            answer.content_type += text.encode("latin-1", errors="ignore")
    return answer


async def read(answer: Answer, max_tokens: int, write_size: int) -> tuple[list[Event], str]:
    """What the answer path makes of ``answer``: its events, and the failure line if any."""

    def wire() -> list[bytes]:
        data = answer.wire()
        return [data[start : start + write_size] for start in range(0, len(data), write_size)]

    events: list[Event] = []
    async with serve_bytes(wire) as port:
        chat = OpenAIChat(f"http://127.0.0.1:{port}/v1", "smollm2-135m-instruct", timeout=10)
        chat.warn = lambda message: events.append(Notice(message))
        reader = LLMReader(chat, "openai", max_tokens)
        try:
            await read_answer(reader, "Where do otters live?", SOURCES, (), events.append, 0.0)
        except ReaderFailed as failure:
            return events, str(failure)
    return events, ""


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answer=mutated(),
    max_tokens=st.sampled_from([1, 8, 64, 512]),
    write_size=st.sampled_from([1 << 20, 4096, 97, 7]),
)
def test_no_server_answer_crashes_escapes_or_runs_unbounded(
    answer: Answer, max_tokens: int, write_size: int
) -> None:
    events, failure = asyncio.run(read(answer, max_tokens, write_size))
    streamed = "".join(event.text for event in events if isinstance(event, AnswerDelta))
    notes = [event.message for event in events if isinstance(event, Notice)]
    for text in (streamed, failure, *notes):
        assert not UNSAFE.search(text), repr(text)
    assert len(streamed) <= stream_limits(max_tokens).chars
    assert "\n" not in failure and len(failure) < 600


def test_the_recorded_answers_read_as_the_server_meant_them() -> None:
    """The fixtures unmutated: the stream and the completion are answers, the error fails."""
    outcomes = [asyncio.run(read(answer, 512, 1 << 20)) for answer in RECORDED]
    (stream_events, stream_failure), (whole_events, whole_failure), (_, error) = outcomes
    assert not stream_failure and not whole_failure
    streamed = "".join(e.text for e in stream_events if isinstance(e, AnswerDelta))
    whole = "".join(e.text for e in whole_events if isinstance(e, AnswerDelta))
    assert (
        streamed.startswith("Otters")
        and whole == "Otters are found in rivers and along coastlines."
    )
    assert "HTTP 500: 1 validation error:" in error and "Input should be a valid list" in error
