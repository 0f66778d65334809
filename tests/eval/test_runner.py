from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.base.events import Notice
from htmlrag_chat.eval import methods
from htmlrag_chat.eval.datasets import load_dataset
from htmlrag_chat.eval.methods import Env
from htmlrag_chat.eval.runner import EvalSettings, evaluate
from htmlrag_chat.eval.stored import EvalCache
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL
from htmlrag_chat.store.db import Store

FIXTURES = Path(__file__).parent.parent / "fixtures"
METHODS = ("plain", "chunk-bm25", "clean", "htmlrag-bm25")


def run(task: str, counter, store: Store | None, limit: int | None = None, **kwargs):
    dataset = FIXTURES / f"{task}.jsonl"
    settings = EvalSettings(task, dataset, (128, 512), kwargs.pop("methods", METHODS), k=3)
    env = Env(counter, DEFAULT_EMBED_MODEL, kwargs.pop("gen_model", "unused"), "cpu")
    events = []
    report, counts = evaluate(
        load_dataset(task, dataset, limit), settings, env, EvalCache(store), events.append
    )
    return report.to_json(), counts, events


def without_times(report: dict) -> dict:
    text = json.dumps(report)
    for item in report["items"]:
        for budgets in item["results"].values():
            for result in budgets.values():
                result.pop("ms")
    for budgets in report["results"].values():
        for summary in budgets.values():
            summary.pop("ms")
    assert json.dumps(report) != text
    return report


@pytest.mark.parametrize("task", ["retention", "qa"])
def test_a_rerun_reads_every_result_from_the_cache(task, tmp_path, tiny_counter, monkeypatch):
    with Store.open(tmp_path / "c.sqlite3") as store:
        first, counts, _ = run(task, tiny_counter, store)
        assert counts.cached == 0 and counts.computed == len(first["items"]) * 4 * 2

        def fail(*args):
            raise AssertionError("recomputed a cached result")

        for name in METHODS:  # a method that runs again fails the test
            monkeypatch.setitem(methods.METHODS, name, _with(methods.METHODS[name], fail))
        again, counts, _ = run(task, tiny_counter, store)
    assert counts.computed == 0
    assert again == first


def _with(method, prepare):
    from dataclasses import replace

    return replace(method, prepare=prepare)


def test_an_interrupted_run_resumes_and_reports_the_same(tmp_path, tiny_counter):
    with Store.open(tmp_path / "resumed.sqlite3") as store:
        run("qa", tiny_counter, store, limit=3)  # "interrupted" after three items
        resumed, counts, _ = run("qa", tiny_counter, store)
    items = len(resumed["items"])
    assert counts.cached == 3 * 4 * 2 and counts.computed == (items - 3) * 4 * 2
    with Store.open(tmp_path / "whole.sqlite3") as store:
        whole, _, _ = run("qa", tiny_counter, store)
    assert without_times(resumed) == without_times(whole)


def test_without_a_store_nothing_is_kept(tiny_counter):
    _, counts, _ = run("retention", tiny_counter, None, limit=2)
    _, again, _ = run("retention", tiny_counter, None, limit=2)
    assert counts.computed == again.computed == 2 * 4 * 2


def test_a_method_whose_model_is_missing_is_reported_unavailable(tmp_path, tiny_counter):
    report, _, events = run(
        "retention", tiny_counter, None, limit=1,
        methods=("htmlrag-bm25", "htmlrag-two-stage"), gen_model=str(tmp_path / "no-model"),
    )  # fmt: skip
    assert list(report["results"]) == ["htmlrag-bm25"]
    assert "no-model" in report["unavailable"]["htmlrag-two-stage"]
    assert list(report["items"][0]["results"]) == ["htmlrag-bm25"]
    reason = report["unavailable"]["htmlrag-two-stage"]
    notices = [event.message for event in events if isinstance(event, Notice)]
    assert notices == [f"htmlrag-two-stage is unavailable: {reason}"]


def test_qa_items_list_their_pages_with_the_gold_page_among_distractors(tiny_counter):
    report, _, _ = run("qa", tiny_counter, None)
    first, multi = report["items"][0], report["items"][-1]
    assert len(first["pages"]) == 4 and first["pages"].count("pages/eishockey-de.html") == 1
    assert multi["pages"] == ["pages/docker-pipenv.html", "pages/docker-engine.html"]
    assert all(item["answer_in_pages"] for item in report["items"])
    assert report["settings"]["k"] == 3 and report["settings"]["distractors"] == "hard"


def test_two_stage_runs_with_a_local_generative_model(tiny_counter, tiny_lm_dir):
    report, _, _ = run(
        "retention", tiny_counter, None, limit=1,
        methods=("htmlrag-two-stage",), gen_model=str(tiny_lm_dir),
    )  # fmt: skip
    assert report["unavailable"] == {}
    assert 0 < report["results"]["htmlrag-two-stage"]["512"]["tokens"] <= 512


def test_results_made_by_other_code_are_measured_again(tmp_path, tiny_counter):
    """The code fingerprint is in every key: the same run under a changed scorer's
    fingerprint computes everything again, and the old code's results stay found."""
    dataset = FIXTURES / "retention.jsonl"
    settings = EvalSettings("retention", dataset, (128,), ("htmlrag-bm25",))
    items = load_dataset("retention", dataset, 2)
    counts = []
    with Store.open(tmp_path / "c.sqlite3") as store:
        for code in ("before", "before", "after", "before"):
            env = Env(tiny_counter, DEFAULT_EMBED_MODEL, "unused", "cpu", code=code)
            counts.append(evaluate(items, settings, env, EvalCache(store))[1])
    assert [(c.computed, c.cached) for c in counts] == [(2, 0), (0, 2), (2, 0), (0, 2)]


def test_a_cached_result_that_is_not_json_is_computed_again(tmp_path, tiny_counter):
    """A derived row the code did not write (issue 21) is a miss, not a crash."""
    with Store.open(tmp_path / "c.sqlite3") as store:
        first, _, _ = run("qa", tiny_counter, store, limit=2)
        store._db.execute("UPDATE derived SET value = X'7b7b'")  # "{{"
        again, counts, _ = run("qa", tiny_counter, store, limit=2)
    assert counts.cached == 0 and counts.computed > 0
    assert _without_ms(again) == _without_ms(first)


def _without_ms(value):
    if isinstance(value, dict):
        return {key: _without_ms(item) for key, item in value.items() if key != "ms"}
    if isinstance(value, list):
        return [_without_ms(item) for item in value]
    return value
