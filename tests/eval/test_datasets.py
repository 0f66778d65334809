from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
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


def test_language_and_answer_location_are_read_and_pages_may_live_elsewhere(tmp_path):
    pages = tmp_path / "corpus"
    pages.mkdir()
    (pages / "page.html").write_text("<p>hallo</p>")
    line = {"id": "q", "question": "Wer?", "answers": ["x"], "file": "page.html"}
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({**line, "lang": "de", "location": "table"}) + "\n")
    (item,) = load_dataset("qa", path, pages=pages)
    assert (item.lang, item.location, item.files) == ("de", "table", (pages / "page.html",))
    with pytest.raises(InputError, match=r"page file page\.html not found"):
        load_dataset("qa", path)  # the dataset's own folder has no pages
    path.write_text(json.dumps({**line, "lang": 3}) + "\n")
    with pytest.raises(InputError, match=r'set\.jsonl:1: "lang" must be a string'):
        load_dataset("qa", path, pages=pages)


def test_the_committed_multilingual_set_is_well_formed():
    lines = (FIXTURES.parent.parent / "bench" / "data" / "qa_lang.jsonl").read_text("utf-8")
    records = [json.loads(line) for line in lines.splitlines()]
    assert len(records) >= 40 and len({record["id"] for record in records}) == len(records)
    assert {record["location"] for record in records} == {"table", "list", "prose"}
    assert len({record["lang"] for record in records}) >= 8
    assert all(record["file"].startswith("pages/") and record["answers"] for record in records)
