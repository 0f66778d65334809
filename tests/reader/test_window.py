"""Each local server's own word on its context window, asked the way it documents it; the
servers here are loopback apps answering those routes as the real ones do."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import web

from htmlrag_chat.reader.window import ServerTokenCounter, context_window
from tests.loopback import serve_app

MODEL = "llama3.1:8b"
ROUTE = "/extras/tokenize/count"  # llama-cpp-python's count


def routes(answers: dict[tuple[str, str], Any], seen: list[Any]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        body = await request.json() if request.can_read_body else None
        seen.append((request.method, request.path, body))
        answer = answers.get((request.method, request.path))
        if isinstance(answer, bytes):  # sent as it is, JSON or not
            return web.Response(body=answer, content_type="application/json")
        return web.json_response(answer) if answer is not None else web.Response(status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    return app


def window_of(server: str, answers: dict[tuple[str, str], Any]) -> tuple[int | None, list[Any]]:
    seen: list[Any] = []

    async def ask() -> int | None:
        async with serve_app(routes(answers, seen)) as port:
            base = f"http://127.0.0.1:{port}/v1"
            return await asyncio.to_thread(context_window, server, base, MODEL)

    return asyncio.run(ask()), seen


SHOW = {"model_info": {"llama.context_length": 131072}, "parameters": 'stop "<|eot_id|>"'}


@pytest.mark.parametrize(
    ("server", "answers", "window"),
    [
        # Ollama reads num_ctx, else its default window, however long the model's own is.
        ("Ollama", {("POST", "/api/show"): SHOW}, 4096),
        ("Ollama", {("POST", "/api/show"): SHOW | {"parameters": "num_ctx 16384\n"}}, 16384),
        ("llama.cpp", {("GET", "/props"): {"default_generation_settings": {"n_ctx": 8192}}}, 8192),
        (
            "vLLM",
            {("GET", "/v1/models"): {"data": [{"id": MODEL, "max_model_len": 32768}]}},
            32768,
        ),
        (
            "LM Studio",
            {
                ("GET", "/api/v0/models"): {
                    "data": [
                        {"id": MODEL, "max_context_length": 131072, "loaded_context_length": 4096}
                    ]
                }
            },
            4096,
        ),
        ("server", {}, None),  # says nothing: unknown (context_tokens in the config says it)
    ],
)
def test_each_server_s_window_is_read_where_it_says_it(
    server: str, answers: dict[tuple[str, str], Any], window: int | None
) -> None:
    found, seen = window_of(server, answers)
    assert found == window
    if server == "Ollama":
        assert seen == [("POST", "/api/show", {"model": MODEL})]


def test_a_listing_whose_ids_hold_half_a_utf16_pair_still_names_the_model() -> None:
    """The model's name comes from the same listing, read the same way: made whole."""
    listing = b'{"data": [{"id": "otter-\\ud83d", "max_model_len": 32768}]}'
    seen: list[Any] = []

    async def ask() -> int | None:
        async with serve_app(routes({("GET", "/v1/models"): listing}, seen)) as port:
            base = f"http://127.0.0.1:{port}/v1"
            return await asyncio.to_thread(context_window, "vLLM", base, "otter-\ufffd")

    assert asyncio.run(ask()) == 32768


def test_an_answer_nested_deeper_than_the_recursion_limit_is_no_answer() -> None:
    deep = b"[" * 100_000
    found, _ = window_of("llama.cpp", {("GET", "/props"): deep, ("GET", "/v1/models"): deep})
    assert found is None


@pytest.mark.parametrize("closing", [False, True])
def test_a_server_s_counts_come_over_one_kept_connection(closing: bool) -> None:
    """Pruning asks for hundreds of counts: one connection for all of them, and a server
    that closes each one (``Connection: close``) still answers every count."""
    peers: list[int] = []

    async def count(request: web.Request) -> web.Response:
        peers.append(request.transport.get_extra_info("peername")[1])  # type: ignore[union-attr]
        text = (await request.json())["input"]
        headers = {"Connection": "close"} if closing else {}
        return web.json_response({"count": len(text.split())}, headers=headers)

    app = web.Application()
    app.router.add_post(ROUTE, count)
    texts = [" ".join(["word"] * n) for n in range(1, 21)]

    async def counted() -> list[int]:
        async with serve_app(app) as port:
            counter = ServerTokenCounter(f"http://127.0.0.1:{port}/v1", MODEL, ROUTE)
            return await asyncio.to_thread(counter.count_many, [*texts, *texts])

    assert asyncio.run(counted()) == [*range(1, 21), *range(1, 21)]
    assert len(peers) == 20  # each text asked once
    assert len(set(peers)) == (20 if closing else 1)
