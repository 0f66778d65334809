"""The tools' work in-process on the bundled recording: budgets always kept, counted as
handed over, and bad arguments refused in one line."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.assembly.wiring import AgentOptions, build_parts
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import Event, StageStarted
from htmlrag_chat.html.rendering import render
from htmlrag_chat.mcp.server import build_server
from htmlrag_chat.mcp.service import CONTEXT_BUDGET, ContextService, Loading, shared
from htmlrag_chat.modelio import loader
from htmlrag_chat.modelio.loader import load_count
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.settings.kinds import Integer
from htmlrag_chat.settings.tree import MAX_BUDGET, find
from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.mcp.servers import QUESTION


@pytest.fixture(scope="module")
def service(
    tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer_dir: Path
) -> Iterator[ContextService]:
    path = import_demo(tmp_path_factory.mktemp("mcp-service"))
    options = AgentOptions(
        reader=ReaderSettings(reader="extractive"),
        prune=PruneSettings(pruner="bm25", tokenizer=str(tiny_tokenizer_dir)),
        replay=True,
    )
    with Store.open(path, readonly=True) as cache, Store.open(path.with_name("h.db")) as history:
        parts = shared(build_parts(options, cache, lambda event: None))
        yield ContextService(Loading.done(parts), cache, history)


def web_context(
    service: ContextService, events: list[Event] | None = None, **arguments: Any
) -> Any:
    sink = (events if events is not None else []).append
    return asyncio.run(service.web_context(QUESTION["question"], sink, **arguments))


@pytest.mark.parametrize("format", ["html", "markdown", "text"])
@pytest.mark.parametrize("budget", [256, 300, 512, 700, 1024, 4096])
def test_the_total_is_never_over_the_budget_and_the_pages_are_pruned_once(
    service: ContextService, tiny_counter: Any, budget: int, format: str
) -> None:
    events: list[Event] = []
    result = web_context(service, events, budget_tokens=budget, pages=5, format=format)
    counts = tiny_counter.count_many([source.content for source in result.sources])
    assert counts == [source.tokens for source in result.sources]
    assert result.total_tokens == sum(counts) <= budget
    assert result.sources  # even the smallest budget holds something
    assert {page.url for page in result.left_out}.isdisjoint(s.url for s in result.sources)
    # Gathered, cleaned and pruned once, to a budget that leaves room for the delimiters.
    started = [event.stage for event in events if isinstance(event, StageStarted)]
    assert started == ["search", "fetch", "clean", "bm25/blocks", "bm25/score", "bm25/prune"]
    # Every page found is a source or left out, with a reason.
    assert len(result.sources) + len(result.left_out) == 5
    assert all(page.reason for page in result.left_out)


def test_a_budget_too_small_for_any_source_leaves_every_page_out_with_why(
    service: ContextService,
) -> None:
    result = web_context(service, budget_tokens=1, pages=5)
    assert result.sources == [] and result.total_tokens == 0
    assert len(result.left_out) == 5 and all(page.reason for page in result.left_out)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"budget_tokens": 0}, "budget_tokens must be 1 or more, not 0"),
        ({"budget_tokens": 140000}, "budget_tokens must be 131072 or less, not 140000"),
        ({"pages": 0}, "pages must be 1 or more, not 0"),
        ({"pages": 21}, "pages must be 20 or less, not 21"),
        ({"format": "pdf"}, "format must be one of html, markdown, text"),
        ({"site": "a b"}, "site must be a domain"),
        ({"site": "theverge.com\u202e"}, "site must be a domain"),
        ({"site": "\u202emoc.egrevht"}, "site must be a domain"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    service: ContextService, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(UserError, match=message):
        web_context(service, **arguments)


def test_each_format_is_pruned_counting_the_contents_as_written(service: ContextService) -> None:
    """The agent a call builds counts its budget in the call's format and numbers its
    sources for it; ``page_context`` returns HTML, so it counts HTML."""
    parts, ignore = service.parts, lambda event: None
    for format in ("html", "markdown", "text"):
        agent = parts.agent(service.cache, ignore, budget=512, rendering=format)
        assert agent.rendering == format
        counter = agent.counter
        assert counter.count("<p>a</p>") == parts.counter.count(render("<p>a</p>", format))
    assert parts.agent(service.cache, ignore).rendering == parts.prune.render


def test_without_a_format_the_server_s_rendering_is_used(service: ContextService) -> None:
    assert web_context(service, budget_tokens=512, pages=5).format == service.parts.prune.render


def test_a_query_the_recording_lacks_is_said(service: ContextService) -> None:
    result = asyncio.run(service.web_context("not recorded at all", lambda event: None))
    assert result.sources == [] and result.left_out == []
    assert result.notices == ["skipped: query not in the recording: 'not recorded at all'"]


def test_the_tools_take_the_settings_bounds_and_help(service: ContextService) -> None:
    """One declaration for every face: ``budget_tokens`` is ``--budget``, ``pages`` is
    ``--pages``, ``site`` is ``--site``, with the bounds and help of the settings tree."""
    tools = {tool.name: tool for tool in asyncio.run(build_server(service).list_tools())}
    for tool, parameter, key in [
        ("web_context", "budget_tokens", "prune.budget"),
        ("page_context", "budget_tokens", "prune.budget"),
        ("web_context", "pages", "research.pages"),
        ("web_context", "site", "search.site"),
    ]:
        schema = tools[tool].input_schema["properties"][parameter]
        setting = find(key)
        assert schema["description"] == setting.help, (tool, parameter)
        if isinstance(setting.kind, Integer):
            assert (schema["minimum"], schema["maximum"]) == (
                setting.kind.least,
                setting.kind.most,
            )
    budget = tools["web_context"].input_schema["properties"]["budget_tokens"]
    assert (budget["default"], budget["maximum"]) == (CONTEXT_BUDGET, MAX_BUDGET)


@pytest.mark.parametrize("site", ["theverge.com", "https://www.TheVerge.com./", "THEVERGE.COM"])
def test_a_site_means_what_the_site_option_means(service: ContextService, site: str) -> None:
    """The recorded search answers (a site is a filter, as ``--site``, not words added to
    the query), and only pages of that site are used or listed as left out."""
    result = web_context(service, site=site, pages=5)
    assert result.sources
    urls = [s.url for s in result.sources] + [page.url for page in result.left_out]
    assert all(url.startswith("https://www.theverge.com/") for url in urls), urls


def test_a_list_of_sites_keeps_to_each_of_them(service: ContextService) -> None:
    """A comma-separated list, as ``--site`` reads it: the pages tried (used or left out)
    come from those sites, from each of them, and from no other."""
    result = web_context(service, site="pcmag.com, theverge.com", pages=5)
    urls = [s.url for s in result.sources] + [page.url for page in result.left_out]
    assert {url.split("/")[2] for url in urls} == {"www.theverge.com", "www.pcmag.com"}


@pytest.mark.parametrize(
    "url",
    [
        "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/",  # NAT64 to 169.254.169.254
        "http://[64:ff9b:1::7f00:1]:8080/",  # local-use NAT64 to 127.0.0.1
        "http://[2002:a9fe:a9fe::]/",  # 6to4 to 169.254.169.254
    ],
)
def test_page_context_refuses_an_address_that_leads_to_a_private_one(
    service: ContextService, url: str
) -> None:
    with pytest.raises(UserError, match="is a private or local address"):
        asyncio.run(service.page_context(url, "metadata", lambda event: None))


def test_a_second_answer_loads_no_model(
    tmp_path: Path, tiny_lm_dir: Path, tiny_tied_lm_dir: Path
) -> None:
    """``mcp`` builds its parts once, the reader and the pruner loaded with them (the
    embedding model may still be landing from its warm-up thread when the first question
    comes); a later ``answer`` call, in a new conversation, loads nothing."""
    path = import_demo(tmp_path)
    options = AgentOptions(
        reader=ReaderSettings(reader="local", model=str(tiny_lm_dir), max_tokens=8),
        prune=PruneSettings(pruner="two-stage", gen_model=str(tiny_tied_lm_dir), budget=1024),
        replay=True,
    )
    with Store.open(path, readonly=True) as cache, Store.open(tmp_path / "h.db") as history:
        parts = shared(build_parts(options, cache, lambda event: None))
        # The reader and the pruner are loaded before any question (this process may have
        # loaded them for an earlier test: the loader keeps each model once).
        loaded = {key[0] for key in loader._LOADED["causal-lm"]}
        assert {str(tiny_lm_dir), str(tiny_tied_lm_dir)} <= loaded
        service = ContextService(Loading.done(parts), cache, history)
        results, loads = [], []
        for _ in range(2):
            results.append(asyncio.run(service.answer(QUESTION["question"], lambda event: None)))
            loads.append(load_count())
    assert loads[1] == loads[0]
    assert all(result.sources and result.answer for result in results)
    assert results[0].conversation_id != results[1].conversation_id
