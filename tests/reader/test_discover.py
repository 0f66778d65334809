"""Local servers found for the user: scripted OpenAI-compatible servers on free loopback
ports stand in for Ollama and the others, and ``--reader auto`` finds, names and streams
from them; the probe never connects anywhere but 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

import pytest
from aiohttp import web

from htmlrag_chat.base.events import Event, Notice
from htmlrag_chat.reader import Source
from htmlrag_chat.reader.discover import (
    PROBE_SECONDS,
    SERVERS,
    Server,
    best_model,
    choose_server,
    find_servers,
    probe_urls,
    server_name,
)
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.registry import look_around
from htmlrag_chat.reader.settings import ReaderSettings
from tests.loopback import serve_app, unused_port
from tests.openai_server import ScriptedLLM, serve_llm
from tests.reader.building import build_reader

REPLY = "Sea otters float in kelp forests [1]."
SOURCES = [Source(1, "https://example.org/otters", "Otters", "<p>kelp</p>", "kelp")]


def said(text: str) -> Any:
    return lambda messages: text


def port_of(url: str) -> int:
    port = urlsplit(url).port
    assert port is not None
    return port


async def build(settings: ReaderSettings) -> tuple[LLMReader | ExtractiveReader, list[str]]:
    """``build_reader`` in a thread (it probes with blocking sockets, and the scripted
    servers answer on this loop), with the notices it gave."""
    events: list[Event] = []
    reader = await asyncio.to_thread(build_reader, settings, events.append)
    return reader, [event.message for event in events if isinstance(event, Notice)]


async def answer(reader: LLMReader | ExtractiveReader) -> str:
    return "".join([chunk async for chunk in reader.answer("Where do otters live?", SOURCES)])


def test_auto_finds_a_server_names_it_and_streams_from_it() -> None:
    llm = ScriptedLLM(said(REPLY), model="llama3.1:8b", also_listed=["nomic-embed-text:latest"])

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            settings = ReaderSettings(reader="auto", probe_ports=(unused_port(), port_of(url)))
            reader, notices = await build(settings)
            assert isinstance(reader, LLMReader) and isinstance(reader.chat, OpenAIChat)
            assert reader.chat.base_url == url and reader.name == "llama3.1:8b"
            address = urlsplit(url).netloc
            assert notices == [
                f"reader: llama3.1:8b on the server at {address} (found on this machine)"
            ]
            assert await answer(reader) == REPLY
            assert llm.requests[-1]["model"] == "llama3.1:8b" and llm.requests[-1]["stream"]

    asyncio.run(scenario())


def test_the_configured_server_wins_over_a_found_one() -> None:
    configured = ScriptedLLM(said("from the configured one"), model="qwen2.5:7b")
    found = ScriptedLLM(said("from the found one"), model="llama-3.1-8b-instruct")

    async def scenario() -> None:
        async with serve_llm(configured) as mine, serve_llm(found) as other:
            settings = ReaderSettings(base_url=mine, probe_ports=(port_of(other),))
            assert settings.reader == "auto"  # the default
            reader, notices = await build(settings)
            assert await answer(reader) == "from the configured one"
            # No model configured: the configured server's own best chat model.
            assert configured.requests[-1]["model"] == "qwen2.5:7b" and not found.requests
            assert notices[0].endswith("(configured)")

    asyncio.run(scenario())


def test_a_configured_model_takes_the_found_server_that_lists_it() -> None:
    first = ScriptedLLM(said("first"), model="llama3.1:8b")
    second = ScriptedLLM(said("second"), model="gemma3:latest", owned_by="vllm")

    async def scenario() -> None:
        async with serve_llm(first) as one, serve_llm(second) as two:
            ports = (port_of(one), port_of(two))
            reader, notices = await build(ReaderSettings(model="gemma3", probe_ports=ports))
            assert await answer(reader) == "second"
            assert second.requests[-1]["model"] == "gemma3:latest"
            assert notices[0].startswith("reader: gemma3:latest on vLLM at 127.0.0.1:")
            # Without a model, the Llama 3 of the first wins.
            reader, _ = await build(ReaderSettings(probe_ports=ports))
            assert await answer(reader) == "first"

    asyncio.run(scenario())


def test_a_server_with_only_embedding_models_is_not_a_reader() -> None:
    llm = ScriptedLLM(said(REPLY), model="nomic-embed-text:latest", also_listed=["bge-m3"])

    async def scenario() -> None:
        async with serve_llm(llm) as url:
            settings = ReaderSettings(probe_ports=(port_of(url),))
            around = await asyncio.to_thread(look_around, settings)
            found = replace(around, here={})  # no model of this machine
            assert [server.models for server in found.found] == [
                ("nomic-embed-text:latest", "bge-m3")
            ]
            events: list[Event] = []
            reader = await asyncio.to_thread(build_reader, settings, events.append, found)
            assert isinstance(reader, ExtractiveReader)
            notices = [event.message for event in events if isinstance(event, Notice)]
            assert "answering extractively" in notices[0] and "Ollama" in notices[0]
            assert not llm.requests

    asyncio.run(scenario())


@asynccontextmanager
async def other_service(kind: str) -> AsyncIterator[int]:
    """Something else on a probed port: a web page, a 404, a server that never answers, or
    one whose JSON is nested past the parser's recursion."""

    async def handle(request: web.Request) -> web.StreamResponse:
        if kind == "hang":
            await asyncio.Future()
        if kind == "page":
            return web.Response(text="<html>a dashboard</html>", content_type="text/html")
        if kind == "deep":
            return web.Response(text="[" * 100_000, content_type="application/json")
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/v1/models", handle)
    async with serve_app(app, shutdown_timeout=0.1) as port:
        yield port


def test_other_services_on_the_ports_are_passed_over() -> None:
    llm = ScriptedLLM(said(REPLY))

    async def scenario() -> None:
        async with (
            other_service("page") as page,
            other_service("missing") as missing,
            serve_llm(llm) as url,
        ):
            ports = (page, missing, unused_port(), port_of(url))
            servers = await asyncio.to_thread(find_servers, ports)
            assert servers == [Server("server", url, ("scripted-llm",))]

    asyncio.run(scenario())


def test_a_listing_with_half_a_utf16_pair_or_nested_too_deeply_is_read_safely() -> None:
    """``"\\ud83d"`` in an id is U+FFFD (it was printed and stored as it came, and failed
    there); a listing nested past the recursion limit is no server, not a crash."""
    llm = ScriptedLLM(said(REPLY), model="otter-\ud83d-7b", utf16=True)

    async def scenario() -> None:
        async with other_service("deep") as deep, serve_llm(llm) as url:
            servers = await asyncio.to_thread(find_servers, (deep, port_of(url)))
            assert servers == [Server("server", url, ("otter-\ufffd-7b",))]


def test_a_port_that_hangs_is_left_out_at_the_deadline() -> None:
    """A port that never answers costs the deadline and is left out, whatever the load:
    nothing here has to answer in time."""

    async def scenario() -> None:
        async with other_service("hang") as hang:
            servers = await asyncio.to_thread(find_servers, (hang, unused_port()), PROBE_SECONDS)
            assert servers == []

    asyncio.run(scenario())


def test_the_probe_connects_to_loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection the probe makes, recorded at the socket: 127.0.0.1 and nothing
    else, even with a proxy configured (a proxy would see the probe otherwise)."""
    targets: list[Any] = []
    connect = socket.socket.connect

    def recording(self: socket.socket, address: Any) -> None:
        targets.append(address)
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", recording)
    monkeypatch.setenv("http_proxy", "http://192.0.2.1:3128")
    monkeypatch.setenv("HTTP_PROXY", "http://192.0.2.1:3128")
    llm = ScriptedLLM(said(REPLY))

    async def scenario() -> list[Server]:
        async with serve_llm(llm) as url:
            return await asyncio.to_thread(find_servers, (unused_port(), port_of(url)))

    servers = asyncio.run(scenario())
    assert [server.models for server in servers] == [("scripted-llm",)]
    assert len(targets) == 2 and {host for host, _ in targets} == {"127.0.0.1"}
    assert all(urlsplit(url).hostname == "127.0.0.1" for url in probe_urls(list(SERVERS)))


def test_the_model_choice_rule() -> None:
    ollama = ["nomic-embed-text:latest", "qwen2.5:latest", "llama3.1:8b", "mxbai-embed-large"]
    assert best_model(ollama) == "llama3.1:8b"
    lm_studio = [
        "text-embedding-nomic-embed-text-v1.5",
        "meta-llama-3.1-8b",
        "llama-3.2-3b-instruct",
    ]
    assert best_model(lm_studio) == "llama-3.2-3b-instruct"  # Llama 3 and instruction-tuned
    assert best_model(["mistral-7b", "phi-3-mini-instruct"]) == "phi-3-mini-instruct"
    assert best_model(["gemma3:4b", "qwen2.5:7b"]) == "gemma3:4b"  # a tie: the server's order
    assert best_model(["nomic-embed-text", "bge-m3", "all-minilm"]) is None
    assert best_model(ollama, "qwen2.5") == "qwen2.5:latest"  # Ollama's default tag
    assert best_model(ollama, "nomic-embed-text") == "nomic-embed-text:latest"  # as asked
    assert best_model(ollama, "llama3.1") is None  # only llama3.1:8b, another tag
    assert best_model(ollama, "mistral") is None
    a = Server("Ollama", "http://127.0.0.1:11434/v1", ("qwen2.5:7b",))
    b = Server("LM Studio", "http://127.0.0.1:1234/v1", ("meta-llama-3.1-8b-instruct",))
    choice = choose_server([a, b])
    assert choice is not None and choice.server is b  # the better model beats port order
    assert choose_server([a, b], "qwen2.5:7b").server is a  # type: ignore[union-attr]
    assert choose_server([a, b], "llama3.3") is None


def test_servers_are_named_by_their_default_port() -> None:
    assert server_name("http://127.0.0.1:11434/v1") == "Ollama"
    assert server_name("http://localhost:1234/v1") == "LM Studio"
    assert server_name("http://127.0.0.1:8080/v1") == "llama.cpp"
    assert server_name("http://[::1]:8000/v1") == "vLLM"
    assert server_name("http://gpu-box:11434/v1") == "gpu-box:11434"  # not this machine
