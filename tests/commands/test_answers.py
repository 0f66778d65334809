"""``htmlrag-chat eval answers`` end to end with a real reader (SmolLM2 in this process):
the tables, the JSON report, the cache, and the errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from htmlrag_chat import cli
from tests.smollm2 import smollm2_gguf

FIXTURES = Path(__file__).parent.parent / "fixtures"
QA = str(FIXTURES / "qa.jsonl")
# Small enough that each of the six prompts SmolLM2 prefills is mostly the reader's own
# instructions, large enough that every method keeps a source of each question.
BUDGET = "128"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def answers_argv(tmp_path: Path, *more: str) -> list[str]:
    return [
        "--cache", str(tmp_path / "c.sqlite3"), "eval", "answers", QA, "--limit", "2",
        "--k", "1", "--budget", BUDGET, "--methods", "default,chunk-bm25",
        "--render", "html,markdown", "--reader", "local", "--model", str(smollm2_gguf()),
        "--max-tokens", "8", "--progress", *more,
    ]  # fmt: skip


def test_two_questions_read_by_smollm2_then_again_from_the_cache(capsys, tmp_path):
    out_file = tmp_path / "answers.json.gz"
    code, out, err = run(capsys, *answers_argv(tmp_path, "--out", str(out_file)))
    assert code == 0, err
    assert "eval answers 6/6" in err and "read 6, cached 0" in err.splitlines()[-1]
    lines = out.splitlines()
    assert f"| method/rendering | {BUDGET} |" in lines
    names = ["default/html", "default/markdown", "chunk-bm25/text"]
    for name in names:
        assert any(line.startswith(f"| {name} | ") for line in lines)

    report = json.loads(gzip.decompress(out_file.read_bytes()))
    assert list(report) == ["results", "items", "unavailable", "settings"]
    assert list(report["results"]) == names
    for budgets in report["results"].values():
        summary = budgets[BUDGET]
        for share in ("correct", "in_context", "cited", "citations_hold", "other_language"):
            assert 0 <= summary[share] <= 1
        assert 0 < summary["context_tokens"] <= int(BUDGET)
        assert summary["prompt_tokens"] > summary["context_tokens"]
        assert 0 < summary["prefill_s"] <= summary["total_s"]
    assert report["settings"]["reader"]["sha256"]  # the model file is part of every key
    item = report["items"][0]
    assert item["question"].startswith("Welcher Torhüter") and item["answers"]
    answer = item["results"]["default/markdown"][BUDGET]
    assert isinstance(answer["answer"], str) and "texts" not in answer
    assert answer["sources"] and set(answer["sources"][0]) == {"number", "url", "title", "content"}
    assert answer["sources"][0]["url"].startswith("pages/")
    assert "<" not in answer["sources"][0]["content"]  # Markdown, not tags
    html = item["results"]["default/html"][BUDGET]["sources"][0]["content"]
    assert html.startswith("<html")
    assert isinstance(answer["citations"], list) and "declined" in answer
    assert isinstance(answer["other_language"], bool)
    assert "answers in another language than the question's" in lines

    code, again, err = run(capsys, *answers_argv(tmp_path))
    assert code == 0 and "read 0, cached 6" in err.splitlines()[-1]
    assert again == out  # the same answers, the same figures


@pytest.mark.parametrize(
    ("more", "code", "message"),
    [
        (["--render", "html,pdf"], 2, "--render: unknown rendering pdf"),
        (["--budget", "8000"], 2, "context of"),
        (["--model", "missing.gguf"], 2, "missing.gguf: no such GGUF file"),
    ],
)
def test_bad_settings_are_one_line_and_an_exit_code(capsys, tmp_path, more, code, message):
    got, _, err = run(capsys, *answers_argv(tmp_path, *more))
    assert got == code and message in err and "Traceback" not in err
