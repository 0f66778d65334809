"""``htmlrag-chat mcp --http`` with the SDK's streamable HTTP client: eight calls at once on one
cache and one model load, and a cancelled call that stops.

The cache holds the bundled recording and is open for writing (``--cache``, not a replay):
everything asked is in it, so nothing goes to the network, while the calls write their
conversations from the event loop and their block embeddings from scoring threads into the
same file at once, which is where "database is locked" would show."""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest
from mcp.shared.exceptions import MCPError

from htmlrag_chat.mcp.connections import HEAD_SECONDS, connection_cap
from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.mcp.flood import close_all, closed_within, flood, unfinished_head
from tests.mcp.servers import (
    QUESTION,
    Watched,
    cancel_while_reading,
    http_server,
    http_session,
    structured,
)
from tests.mcp.test_stdio import reply
from tests.openai_server import ScriptedLLM, ThreadedLLM

GOLD_URL = QUESTION["gold_url"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_demo(tmp_path_factory.mktemp("mcp-http"))


def test_eight_concurrent_calls_then_a_cancelled_one_over_http(
    recording: Path, tmp_path: Path
) -> None:
    llm = ScriptedLLM(reply)

    async def scenario(url: str, token: str | None) -> float:
        async with http_session(url, token) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"web_context", "page_context", "answer", "research"}
            question = QUESTION["question"]
            calls = [
                *(
                    ("web_context", {"query": question, "budget_tokens": budget})
                    for budget in (512, 1024, 2048)
                ),
                ("web_context", {"query": question, "budget_tokens": 1024, "format": "markdown"}),
                ("page_context", {"url": GOLD_URL, "query": "ARKit"}),
                ("page_context", {"url": GOLD_URL, "query": "eye contact", "budget_tokens": 512}),
                ("answer", {"question": question}),
                ("answer", {"question": question}),
            ]
            results = await asyncio.gather(
                *(session.call_tool(name, arguments) for name, arguments in calls)
            )
            records = [structured(result) for result in results]  # none failed
            for (name, arguments), record in zip(calls, records, strict=True):
                if name == "answer":
                    assert record["answer"].startswith("FaceTime uses ARKit")
                    assert re.search(r"\[\d\]", record["answer"]) and record["sources"]
                    assert record["conversation_id"] is not None
                else:
                    assert GOLD_URL in [source["url"] for source in record["sources"]]
                    assert record["total_tokens"] <= arguments.get("budget_tokens", 2048)
            ids = {record["conversation_id"] for record in records[-2:]}
            assert len(ids) == 2  # two new conversations, both kept

            llm.hang_after = 3  # the next answer stalls after three words
            return await cancel_while_reading(session, question, llm)

    with ThreadedLLM(llm) as llm_url:
        options = ["--cache", str(recording), "--reader", "openai", "--base-url", llm_url]
        options += ["--model", llm.model, "--pruner", "fused", "--rounds", "1"]
        with http_server(options, tmp_path) as (url, token):
            assert urlsplit(url).hostname == "127.0.0.1" and url.endswith("/mcp")
            # A page's DNS rebinding gets nowhere, even with the token.
            assert rebound_status(url, token) in (403, 421)
            stopped = asyncio.run(scenario(url, token))
    with Store.open(recording, readonly=True) as cache:
        assert len(cache.conversations()) == 3  # the cancelled question is kept, unanswered
        assert cache.stats()["embeddings"] > 0
    print(f"stopped {stopped * 1000:.0f} ms after the cancel")


def rebound_status(url: str, token: str | None) -> int:
    """The status of a request that reaches the server under another name, as a web page
    would send it after rebinding its domain to 127.0.0.1."""
    return refused(url, {"Host": "rebound.example", "Authorization": f"Bearer {token}"}).code


def refused(url: str, headers: dict[str, str]) -> HTTPError:
    """The HTTP error a ping with ``headers`` gets."""
    request = Request(
        url,
        data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={"Content-Type": "application/json", **headers},
    )
    with pytest.raises(HTTPError) as raised:
        urlopen(request, timeout=10)
    return raised.value


def test_http_needs_the_bearer_token_printed_at_start_or_configured(
    recording: Path, tiny_tokenizer_dir: Path, tmp_path: Path
) -> None:
    """Loopback is shared by every local user: without the token, no tool, no resource."""
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    options += ["--tokenizer", str(tiny_tokenizer_dir)]

    async def allowed(url: str, token: str) -> list[str]:
        async with http_session(url, token) as session:
            listed = await session.read_resource("htmlrag-chat://conversations")
            assert isinstance(json.loads(listed.contents[0].text), list)
            return [tool.name for tool in (await session.list_tools()).tools]

    async def turned_away(url: str, token: str | None) -> list[int]:
        """The statuses the SDK's client got before it gave up, with the error it says."""
        statuses: list[int] = []
        with pytest.raises(ExceptionGroup) as raised:
            async with http_session(url, token, statuses) as session:
                await session.list_tools()
        assert raised.group_contains(MCPError, match="error response", depth=2)
        return statuses

    with http_server(options, tmp_path) as (url, token):
        assert token is not None and len(token) >= 40  # 256 random bits, URL-safe
        assert "web_context" in asyncio.run(allowed(url, token))
        for wrong in (None, token[:-1], token.swapcase()):
            assert asyncio.run(turned_away(url, wrong)) == [401]
        for headers in ({}, {"Authorization": f"Basic {token}"}, {"Authorization": token}):
            error = refused(url, headers)
            assert error.code == 401 and error.headers["WWW-Authenticate"].startswith("Bearer")

    configured = "a token the user chose, kept in the settings"
    with http_server(options, tmp_path, {"HTMLRAG_CHAT_MCP_TOKEN": configured}) as (url, said):
        assert said is None  # a configured token is never printed
        assert "answer" in asyncio.run(allowed(url, configured))
        assert refused(url, {"Authorization": f"Bearer {token}"}).code == 401


def test_a_flood_of_idle_connections_leaves_the_server_answering_the_token(
    recording: Path, tiny_tokenizer_dir: Path, tmp_path: Path
) -> None:
    """Idle connections without a token once took every descriptor of a server under a low
    open-file limit (1,100 under 1024; here 256 under 128, low enough that accepting still
    meets EMFILE before the cap closes the excess): the next accept failed, reporting it
    failed too, and the server ended. A request's head that never ended held its
    connection forever."""
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    options += ["--tokenizer", str(tiny_tokenizer_dir)]
    files, cap = 128, connection_cap(128)

    async def tools(url: str, token: str | None) -> list[str]:
        async with http_session(url, token) as session:
            return [tool.name for tool in (await session.list_tools()).tools]

    watched = Watched()
    with http_server(options, tmp_path, files=files, watched=watched) as (url, token):
        connections = flood(url, 2 * files)
        assert len(connections) > files
        deadline = time.monotonic() + 30
        while watched.sockets() > cap + 4:  # its listener and the event loop's own
            assert time.monotonic() < deadline, f"{watched.sockets()} sockets, cap {cap}"
            time.sleep(0.1)
        assert "answer" in asyncio.run(tools(url, token))  # a place is made for it
        assert closed_within(unfinished_head(url), HEAD_SECONDS + 10) is not None
        close_all(connections)
        assert "answer" in asyncio.run(tools(url, token))
    said = "".join(watched.lines)
    assert "Traceback" not in said and "internal error" not in said
    assert "out of file descriptors: new connections wait" in said  # EMFILE met, and survived
