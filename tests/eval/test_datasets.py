from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.errors import InputError
from htmlrag_chat.eval.datasets import QAItem, RetentionItem, load_dataset

FIXTURES = Path(__file__).parent.parent / "fixtures"


def write(folder: Path, *lines: object) -> Path:
    (folder / "page.html").write_text("<p>hello</p>")
    path = folder / "set.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_the_committed_slices_load():
    retention = load_dataset("retention", FIXTURES / "retention.jsonl")
    qa = load_dataset("qa", FIXTURES / "qa.jsonl")
    assert all(isinstance(item, RetentionItem) and item.file.is_file() for item in retention)
    assert all(isinstance(item, QAItem) and item.answers for item in qa)
    single, multi = qa[0], qa[-1]
    assert single.distractors and len(single.files) == 1
    assert not multi.distractors and len(multi.files) == 2


def test_limit_and_blank_lines(tmp_path):
    line = {"url": "u", "file": "page.html", "with": ["a"], "without": []}
    path = write(tmp_path, line, "", line, line)
    assert len(load_dataset("retention", path, limit=2)) == 2
    assert len(load_dataset("retention", path)) == 3


@pytest.mark.parametrize(
    ("task", "line", "message"),
    [
        ("qa", "{not json", "set.jsonl:1: not valid JSON"),
        ("qa", "[1, 2]", "set.jsonl:1: not a JSON object"),
        ("qa", {"id": "q", "answers": ["x"], "file": "page.html"}, '"question" must be'),
        ("qa", {"question": "q?", "answers": [], "file": "page.html"}, '"answers" must hold'),
        ("qa", {"question": "q?", "answers": "x", "file": "page.html"}, '"answers" must be a list'),
        ("qa", {"question": "q?", "answers": ["x"], "pages": []}, '"pages" must be'),
        ("qa", {"question": "q?", "answers": ["x"], "file": "gone.html"}, "gone.html not found"),
        ("retention", {"url": "u", "file": "page.html", "with": ["a"]}, '"without" must be'),
    ],
)
def test_bad_lines_are_named_by_line(tmp_path, task, line, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        load_dataset(task, write(tmp_path, line))


def test_a_missing_or_empty_dataset_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="no such dataset"):
        load_dataset("qa", tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="no items"):
        load_dataset("qa", write(tmp_path, ""))
