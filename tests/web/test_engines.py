"""The search engines' table: every name has what asks it and a row in docs/search.md, every
function that asks an engine has a name, every key a setting, and an engine added to the
table is searched with no other edit."""

from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from ddgs.engines import ENGINES as DDGS_TEXT

from htmlrag_chat.settings.tree import find
from htmlrag_chat.web import apis, engines
from htmlrag_chat.web.engines import API, BY_NAME, ENGINES, SCRAPED, Engine
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.search import WebSearcher
from htmlrag_chat.web.settings import SearchSettings
from tests.loopback import serve_app

DOC = Path(__file__).resolve().parents[2] / "docs" / "search.md"


def test_every_engine_has_what_asks_it_and_no_name_twice() -> None:
    assert len(BY_NAME) == len(ENGINES)
    for engine in ENGINES:
        assert engine.kind in (API, SCRAPED), engine.name
        assert (engine.ask is not None) == (engine.kind == API), engine.name
    scraped = {engine.name for engine in ENGINES if engine.kind == SCRAPED}
    # ddgs skips a name it lacks (a log line, no results): each must be one of its engines,
    # and each of its text engines is offered.
    assert scraped == set(DDGS_TEXT["text"])


def test_every_function_that_asks_an_api_is_an_engines() -> None:
    asking = {
        function
        for name, function in inspect.getmembers(apis, inspect.iscoroutinefunction)
        if not name.startswith("_") and function.__module__ == apis.__name__
    }
    assert asking == {engine.ask for engine in ENGINES if engine.ask is not None}


def test_docs_search_lists_exactly_the_engines() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| name | what | needs |") :].split("\n\n", 1)[0]
    rows = table.splitlines()[2:]
    documented = [name for row in rows for name in re.findall(r"`([a-z-]+)`", row.split("|")[1])]
    assert sorted(documented) == sorted(BY_NAME)


def test_each_key_is_a_secret_setting_and_a_field_of_the_search_settings() -> None:
    fields = set(SearchSettings.__dataclass_fields__)
    keys = {engine.key.name for engine in ENGINES if engine.key is not None}
    assert keys == {name for name in fields if name.endswith("_api_key")}
    for name in keys:
        assert find(f"search.{name}").secret


def test_the_backends_setting_accepts_the_engines_and_refuses_a_name_ddgs_dropped() -> None:
    kind = find("search.backends").kind
    assert kind.check(["startpage", "tavily"]) == ("startpage", "tavily")
    with pytest.raises(ValueError, match="unknown bing"):
        kind.check(["bing"])


def test_the_command_line_sees_the_keys_the_table_declares() -> None:
    """Every command reads its settings through the whole tree: in a fresh interpreter,
    the entry point alone brings the engines' keys in."""
    code = (
        "import htmlrag_chat.cli\n"
        "from htmlrag_chat.settings.tree import BY_KEY\n"
        "print('search.tavily_api_key' in BY_KEY, 'search.brave_api_key' in BY_KEY)\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.split() == ["True", "True"], shown.stderr


def test_an_engine_added_to_the_table_is_searched_in_its_place(monkeypatch) -> None:
    """A new API engine is one entry (and its function): the searcher asks it first and
    hands over to the next engine as for any other."""

    async def intranet(
        session: aiohttp.ClientSession, query: str, settings: SearchSettings, endpoint: str
    ) -> list[SearchResult]:
        async with session.get(endpoint, params={"q": query}) as response:
            found = await response.json()
        return [SearchResult(item["url"], item["title"], "") for item in found]

    async def answer(request: web.Request) -> web.Response:
        hit = {"url": f"https://example.org/{request.query['q']}", "title": "hit"}
        return web.json_response([hit])

    monkeypatch.setitem(engines.BY_NAME, "intranet", Engine("intranet", API, intranet))

    async def scenario() -> list[SearchResult]:
        app = web.Application()
        app.router.add_get("/q", answer)
        async with serve_app(app) as port:
            searcher = WebSearcher(
                SearchSettings(backends=("intranet", "duckduckgo")),
                endpoints={"intranet": f"http://127.0.0.1:{port}/q"},
            )
            return await searcher.search("wiki")

    assert asyncio.run(scenario()) == [SearchResult("https://example.org/wiki", "hit", "")]
