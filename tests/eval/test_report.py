from __future__ import annotations

import json

from htmlrag_chat.eval.report import Report, dumps, markdown


def retention_report() -> Report:
    def row(with_kept: int, without_kept: int, tokens: int, ms: float) -> dict:
        return {"with_kept": with_kept, "without_kept": without_kept, "tokens": tokens, "ms": ms}

    items = [
        {"id": "a", "with": 3, "without": 2, "results": {"m": {"512": row(3, 1, 500, 10.0)}}},
        {"id": "b", "with": 1, "without": 0, "results": {"m": {"512": row(0, 0, 300, 20.0)}}},
    ]
    settings = {"tokenizer": "tiny"}
    return Report("retention", (512,), ("m",), items, {"x": "no model"}, settings)


def test_retention_shares_are_over_all_snippets_not_averaged_per_page():
    summary = retention_report().results()["m"]["512"]
    assert summary == {"recall": 0.75, "leakage": 0.5, "tokens": 400.0, "ms": 15.0}


def test_qa_recall_is_the_share_of_questions_and_has_no_leakage():
    items = [
        {"id": str(i), "results": {"m": {"64": {"answer": i < 1, "tokens": 60, "ms": 1.0}}}}
        for i in range(3)
    ]
    report = Report("qa", (64,), ("m",), items, {}, {"tokenizer": "tiny"})
    assert report.results() == {
        "m": {"64": {"recall": 0.3333, "leakage": None, "tokens": 60.0, "ms": 1.0}}
    }


def test_the_json_report_has_the_documented_shape():
    report = retention_report().to_json()
    assert list(report) == ["results", "items", "unavailable", "settings"]
    assert list(report["results"]["m"]["512"]) == ["recall", "leakage", "tokens", "ms"]
    assert report["unavailable"] == {"x": "no model"}


def test_the_json_file_holds_one_line_per_item():
    report = retention_report()
    text = dumps(report)
    assert json.loads(text) == report.to_json()
    lines = text.splitlines()
    assert sum(line.startswith('{"id": ') for line in lines) == len(report.items)


def test_markdown_tables_of_methods_by_budget():
    text = markdown(retention_report())
    lines = text.splitlines()
    assert lines[2:5] == ["| method | 512 |", "| --- | ---: |", "| m | 0.750 / 0.500 |"]
    assert "| m | 400 / 15 |" in lines
    assert lines[-1] == "x: unavailable (no model)"
