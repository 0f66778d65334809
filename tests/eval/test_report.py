from __future__ import annotations

import json

from htmlrag_chat.eval.report import EvalReport, dumps, markdown


def retention_report() -> EvalReport:
    def row(with_kept: int, without_kept: int, tokens: int, ms: float) -> dict:
        return {"with_kept": with_kept, "without_kept": without_kept, "tokens": tokens, "ms": ms}

    items = [
        {"id": "a", "with": 3, "without": 2, "results": {"m": {"512": row(3, 1, 500, 10.0)}}},
        {"id": "b", "with": 1, "without": 0, "results": {"m": {"512": row(0, 0, 300, 20.0)}}},
    ]
    settings = {"tokenizer": "tiny"}
    return EvalReport("retention", (512,), ("m",), items, {"x": "no model"}, settings)


def test_retention_shares_are_over_all_snippets_not_averaged_per_page():
    summary = retention_report().results()["m"]["512"]
    assert summary == {"recall": 0.75, "leakage": 0.5, "tokens": 400.0, "ms": 15.0}


def test_qa_recall_is_the_share_of_questions_and_has_no_leakage():
    items = [
        {"id": str(i), "results": {"m": {"64": {"answer": i < 1, "tokens": 60, "ms": 1.0}}}}
        for i in range(3)
    ]
    report = EvalReport("qa", (64,), ("m",), items, {}, {"tokenizer": "tiny"})
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


def labelled_qa_report() -> EvalReport:
    def item(name: str, lang: str, location: str, kept: list[bool]) -> dict:
        results = {
            method: {"512": {"answer": answer, "tokens": 500, "ms": 1.0}}
            for method, answer in zip(("ours", "chunks"), kept, strict=True)
        }
        return {"id": name, "lang": lang, "location": location, "results": results}

    items = [
        item("1", "de", "table", [True, False]),
        item("2", "de", "prose", [True, True]),
        item("3", "es", "table", [False, True]),
        {"id": "4", "results": item("4", "", "", [True, True])["results"]},  # no labels
    ]
    return EvalReport("qa", (512,), ("ours", "chunks"), items, {}, {"tokenizer": "tiny"})


def test_qa_items_with_a_language_or_location_are_counted_per_group():
    groups = labelled_qa_report().groups()
    assert groups["lang"] == {
        "de": {"items": 2, "recall": {"ours": {"512": 1.0}, "chunks": {"512": 0.5}}},
        "es": {"items": 1, "recall": {"ours": {"512": 0.0}, "chunks": {"512": 1.0}}},
    }
    assert groups["location"]["table"] == {
        "items": 2, "recall": {"ours": {"512": 0.5}, "chunks": {"512": 0.5}}
    }  # fmt: skip
    assert list(labelled_qa_report().to_json()) == [
        "results", "groups", "items", "unavailable", "settings"
    ]  # fmt: skip
    assert retention_report().groups() == {}  # no labels, no groups


def test_markdown_has_a_table_per_group_key():
    lines = markdown(labelled_qa_report()).splitlines()
    assert "by lang: questions whose gold answer is in the context" in lines
    assert "| de (2) | ours | 1.000 |" in lines and "| es (1) | chunks | 1.000 |" in lines
    assert "| table (2) | chunks | 0.500 |" in lines
    text = dumps(labelled_qa_report())
    assert json.loads(text) == labelled_qa_report().to_json()
