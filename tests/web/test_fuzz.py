"""Fuzzing the search API backends with their own answers, mutated the way a broken or
hostile server sends them back.

Each example takes an answer of SearXNG, the Brave Search API or Tavily
(``tests/fixtures/search_answers``: written in each API's documented shape, with URLs and
text of real pages; no network here to capture live ones), mutates it (a value anywhere
replaced by any JSON value or by hostile text, a key dropped, a value nested deeper than the
parser's recursion, the bytes cut, re-encoded or gzipped) and serves it from a loopback
server to the real searcher. It asserts:

- the search lists results or fails as a ``SearchError`` with one line: no other exception;
- every result listed is an http(s) web address, on the allowed sites, each page once, at
  most ``max_results``, its title and snippet one safe line.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from htmlrag_chat.base.safety import one_line
from htmlrag_chat.web.search import SearchError, WebSearcher, normalize_url, web_address
from htmlrag_chat.web.settings import SearchSettings
from htmlrag_chat.web.sites import allowed
from tests.loopback import ThreadedApp
from tests.search_apis import BRAVE_PATH, KEY

ANSWERS = Path(__file__).resolve().parents[1] / "fixtures" / "search_answers"
FILES = {"searxng": "searxng.json", "brave-api": "brave.json", "tavily": "tavily.json"}
DEEP = "zqx-deep-placeholder"
HOSTILE = [
    "javascript:alert(1)", "file:///etc/passwd", "data:text/html,<b>x</b>", "//evil.example/",
    "https://[::1", "http://", "https://evil.example:99999/", "https://EVIL.example./x",
    "https://xn--bcher-kva.de/", "https://bücher.de/", "\x1b]0;title\x07", "\x1b[2J",
    "<|eot_id|>", "a\u202eb", "\ud800", "\u2028", "x" * 300, "", " ", "https://ok.example/",
]  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
    | st.sampled_from(HOSTILE),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip


@dataclass
class Server:
    """What the loopback APIs answer next: the same bytes for every API."""

    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)

    async def answer(self, request: web.Request) -> web.Response:
        return web.Response(
            body=self.body, headers={"Content-Type": "application/json", **self.headers}
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/search", self.answer)
        app.router.add_post("/search", self.answer)
        app.router.add_get(BRAVE_PATH, self.answer)
        return app


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Server, int]]:
    serving = Server()
    with ThreadedApp(serving.app()) as port:
        yield serving, port


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON value, as the keys and indexes leading there."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def put(document: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return document


def drop(document: Any, path: tuple) -> Any:
    if path:
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        del parent[path[-1]]
    return document


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes, dict[str, str]]:
    api = draw(st.sampled_from(sorted(FILES)))
    document = json.loads((ANSWERS / FILES[api]).read_text(encoding="utf-8"))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(document)))
        how = draw(st.sampled_from(["replace", "hostile", "drop", "deep", "many"]))
        if how == "replace":
            document = put(document, path, draw(JSON))
        elif how == "hostile":
            document = put(document, path, draw(st.sampled_from(HOSTILE)))
        elif how == "drop":
            document = drop(document, path)
        elif how == "deep" and DEEP not in json.dumps(document):
            document = put(document, path, DEEP)
        elif how == "many" and isinstance(document, dict):
            results = [{"url": f"https://ok.example/{n}", "title": str(n)} for n in range(300)]
            document = put(document, path, results)
    text = json.dumps(document, ensure_ascii=draw(st.booleans()))
    depth = draw(st.sampled_from([10, 900, 5000, 200_000]))
    text = text.replace(f'"{DEEP}"', "[" * depth + "]" * depth)
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "utf-16", "utf-32"]))
    body = text.encode(encoding, "surrogatepass")
    cut = draw(st.sampled_from([None, None, None, 0, 1, len(body) // 2, len(body) - 1]))
    body = body if cut is None else body[:cut]
    headers: dict[str, str] = {}
    if draw(st.booleans()):
        body, headers = gzip.compress(body), {"Content-Encoding": "gzip"}
    return api, body, headers


@given(answer=mutated(), sites=st.sampled_from([(), ("docs.docker.com",), ("bücher.de",)]))
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_mutated_api_answer_is_listed_safely_or_fails_in_one_line(
    server: tuple[Server, int], answer: tuple[str, bytes, dict[str, str]], sites: tuple[str, ...]
) -> None:
    api, body, headers = answer
    serving, port = server
    serving.body, serving.headers = body, headers
    base = f"http://127.0.0.1:{port}"
    config = SearchSettings(
        backends=(api,), searxng_url=base, brave_api_key=KEY, tavily_api_key=KEY,
        site=sites, max_results=8,
    )  # fmt: skip
    searcher = WebSearcher(
        config, endpoints={"brave-api": base + BRAVE_PATH, "tavily": base + "/search"}
    )
    try:
        results = asyncio.run(searcher.search("q"))
    except SearchError as error:
        assert "\n" not in str(error) and error.exit_code == 5
        event(f"failed: {error.kind}")
        return
    event("listed")
    assert 0 < len(results) <= config.max_results
    assert len({normalize_url(r.url) for r in results}) == len(results)
    for result in results:
        assert web_address(result.url) and allowed(result.url, config), result.url
        assert one_line(result.title) == result.title and one_line(result.snippet) == result.snippet
