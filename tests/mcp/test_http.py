"""``htmlrag-chat mcp --http`` with the SDK's streamable HTTP client: eight calls at once on one
cache and one model load, and a cancelled call that stops.

The cache holds the bundled recording and is open for writing (``--cache``, not a replay):
everything asked is in it, so nothing goes to the network, while the calls write their
conversations from the event loop and their block embeddings from scoring threads into the
same file at once, which is where "database is locked" would show."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from urllib.error import HTTPError
from urllib.parse import urlsplit
from urllib.request import Request, urlopen

import pytest

from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.mcp.servers import (
    QUESTION,
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

    async def scenario(url: str) -> float:
        async with http_session(url) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            assert names == {"web_context", "page_context", "answer"}
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
        with http_server(options, tmp_path) as url:
            assert urlsplit(url).hostname == "127.0.0.1" and url.endswith("/mcp")
            assert rebound_status(url) in (403, 421)  # a page's DNS rebinding gets nowhere
            stopped = asyncio.run(scenario(url))
    with Store.open(recording, readonly=True) as cache:
        assert len(cache.conversations()) == 3  # the cancelled question is kept, unanswered
        assert cache.stats()["embeddings"] > 0
    print(f"stopped {stopped * 1000:.0f} ms after the cancel")


def rebound_status(url: str) -> int:
    """The status of a request that reaches the server under another name, as a web page
    would send it after rebinding its domain to 127.0.0.1."""
    request = Request(
        url,
        data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={"Host": "rebound.example", "Content-Type": "application/json"},
    )
    with pytest.raises(HTTPError) as refused:
        urlopen(request, timeout=10)
    return refused.value.code
