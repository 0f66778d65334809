from __future__ import annotations

import pytest

from htmlrag_chat.eval.methods import METHODS, Env, main_text, unavailable_models
from htmlrag_chat.eval.metrics import html_text
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL
from tests.conftest import PAGES

BUDGETS = (1, 500, 1000, 2000)
QUESTION = "Under which license is Docker Engine released?"


@pytest.fixture(scope="module")
def pages() -> list[PageInput]:
    by_name = {page.name: page for page in PAGES}
    return [PageInput(name, by_name[name].data) for name in ("aclu-riverside", "docker-engine")]


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_stays_within_its_budget(name, pages, tiny_counter, tiny_lm_dir):
    env = Env(tiny_counter, DEFAULT_EMBED_MODEL, str(tiny_lm_dir), "cpu")
    method = METHODS[name]
    fit = method.prepare(env, QUESTION, pages)
    sizes = []
    for budget in BUDGETS:
        context = fit(budget).text
        sizes.append(tiny_counter.count(context))
        assert sizes[-1] <= budget
    assert 0 < sizes[1] <= sizes[2] <= sizes[3]
    assert sizes[-1] > BUDGETS[-1] // 2  # the budget is used, not left mostly empty


@pytest.mark.parametrize("name", ["plain", "chunk-bm25", "clean", "htmlrag-bm25"])
def test_a_generous_budget_keeps_both_pages(name, pages, tiny_counter):
    env = Env(tiny_counter, DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, "cpu")  # not here: left out
    method = METHODS[name]
    context = method.prepare(env, QUESTION, pages)(10**6).text
    text = html_text(context) if method.html else context
    assert "Apache License" in text and "Riverside" in text


def test_query_aware_methods_keep_the_answer_where_truncation_loses_it(pages, tiny_counter):
    env = Env(tiny_counter, DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, "cpu")  # not here: left out
    found = {}
    for name in ("clean", "htmlrag-bm25", "chunk-bm25"):
        method = METHODS[name]
        context = method.prepare(env, QUESTION, pages)(600).text
        found[name] = "Apache License" in (html_text(context) if method.html else context)
    assert found == {"clean": False, "htmlrag-bm25": True, "chunk-bm25": True}


def test_plain_is_trafilaturas_main_text():
    docker = next(page for page in PAGES if page.name == "docker-engine")
    text = main_text(PageInput("docker", docker.data))
    assert "Apache License" in text and "<div" not in text
    assert "Toggle navigation" not in text
    assert main_text(PageInput("binary", b"\x00\x01\x02\x03")) == ""


def test_a_model_that_cannot_be_loaded_is_named(tmp_path, tiny_counter):
    env = Env(tiny_counter, str(tmp_path / "no-embedder"), str(tmp_path / "no-pruner"), "cpu")
    reasons = unavailable_models({"embed", "gen"}, env)
    assert set(reasons) == {"embed", "gen"}
    assert "no-pruner" in reasons["gen"] and reasons["gen"].startswith("generative pruner")


SEPARATORS = {"plain": "\n\n", "chunk-bm25": "\n", "chunk-embed": "\n"}


@pytest.mark.parametrize("name", ["plain", "chunk-bm25", "clean", "htmlrag-bm25", "default"])
@pytest.mark.parametrize("budget", [300, 1000, 10**6])
def test_a_context_is_its_pieces_page_by_page(name, budget, pages, tiny_counter):
    """What ``eval answers`` numbers as sources is the context ``eval qa`` scores, page by
    page in reading order, each piece naming its page."""
    env = Env(tiny_counter, DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, "cpu")  # not here: left out
    method = METHODS[name]
    context = method.prepare(env, QUESTION, pages)(budget)
    indices = [piece.page for piece in context.pieces]
    assert indices == sorted(set(indices)) and set(indices) <= {0, 1}
    joined = SEPARATORS.get(name, "\n").join(piece.content for piece in context.pieces)
    assert joined.strip() == context.text.strip()
    if budget == 10**6:
        assert indices == [0, 1]
        last = context.pieces[-1].content
        assert "Apache License" in (html_text(last) if method.html else last)
