"""The tools' work in-process on the bundled recording: budgets always kept, counted as
handed over, and bad arguments refused in one line."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.errors import UserError
from htmlrag_chat.events import Event
from htmlrag_chat.html.rendering import render
from htmlrag_chat.mcp.service import ContextService, shared
from htmlrag_chat.prune_factory import PruneSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.wiring import AgentOptions, build_parts
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
        yield ContextService(parts, cache, history)


def web_context(service: ContextService, **arguments: Any) -> Any:
    events: list[Event] = []
    return asyncio.run(service.web_context(QUESTION["question"], events.append, **arguments))


@pytest.mark.parametrize("format", ["html", "markdown", "text"])
@pytest.mark.parametrize("budget", [256, 300, 512, 700, 1024, 4096])
def test_the_total_is_never_over_the_budget(
    service: ContextService, tiny_counter: Any, budget: int, format: str
) -> None:
    result = web_context(service, budget_tokens=budget, pages=5, format=format)
    counts = tiny_counter.count_many([source.content for source in result.sources])
    assert counts == [source.tokens for source in result.sources]
    assert result.total_tokens == sum(counts) <= budget
    assert result.sources  # even the smallest budget holds something
    assert {page.url for page in result.left_out}.isdisjoint(s.url for s in result.sources)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"budget_tokens": 100}, "budget_tokens must be between 256 and 32768"),
        ({"pages": 0}, "pages must be between 1 and 10"),
        ({"format": "pdf"}, "format must be one of html, markdown, text"),
        ({"site": "a b"}, "site must be a domain"),
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
        assert counter.count("<p>a</p>") == parts.counter.counter.count(render("<p>a</p>", format))
    assert parts.agent(service.cache, ignore).rendering == parts.prune.render


def test_without_a_format_the_server_s_rendering_is_used(service: ContextService) -> None:
    assert web_context(service, budget_tokens=512, pages=5).format == service.parts.prune.render


def test_a_query_the_recording_lacks_is_said(service: ContextService) -> None:
    result = asyncio.run(service.web_context("not recorded at all", lambda event: None))
    assert result.sources == [] and result.left_out == []
    assert result.notices == ["skipped: query not in the recording: 'not recorded at all'"]
