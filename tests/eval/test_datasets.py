from __future__ import annotations

import json
import os
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


def outside_folder(tmp_path: Path, name: str = "data") -> tuple[Path, Path]:
    """A dataset's folder with a page, a link out of it, and a secret file beside it."""
    secret = tmp_path / "credentials"
    secret.write_text("<p>aws_secret_access_key = hunter2</p>")
    folder = tmp_path / name
    folder.mkdir()
    (folder / "page.html").write_text("<p>hello</p>")
    (folder / "out.html").symlink_to(secret)
    (folder / "alias.html").symlink_to(folder / "page.html")
    return folder, secret


@pytest.mark.parametrize("key", ["file", "pages"])
@pytest.mark.parametrize(
    "name", ["ABSOLUTE", "../credentials", "sub/../../credentials", "out.html"]
)
def test_a_page_file_outside_the_dataset_s_folder_is_refused(tmp_path, key, name):
    """A dataset from someone else once had ``eval answers`` read ``~/.aws/credentials`` as
    a page and send it to the reader: absolute paths, ``..`` and links out are refused."""
    folder, secret = outside_folder(tmp_path)
    name = str(secret) if name == "ABSOLUTE" else name
    line = {"question": "q?", "answers": ["x"], key: name if key == "file" else [name]}
    path = folder / "set.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=r"set\.jsonl:1: page file .* is outside .*data") as raised:
        load_dataset("qa", path)
    assert raised.value.exit_code == 3
    pages, _ = outside_folder(tmp_path, "pages")
    with pytest.raises(InputError, match=r"is outside .*pages"):
        load_dataset("qa", path, pages=pages)  # --pages-dir names the folder: the same rule
    retention = {"url": "u", "file": name, "with": ["a"], "without": []}
    path.write_text(json.dumps(retention) + "\n")
    with pytest.raises(InputError, match="is outside"):
        load_dataset("retention", path)


def test_a_link_that_stays_inside_the_folder_is_a_page(tmp_path):
    folder, _ = outside_folder(tmp_path)
    path = folder / "set.jsonl"
    path.write_text(json.dumps({"question": "q?", "answers": ["x"], "file": "alias.html"}) + "\n")
    (item,) = load_dataset("qa", path)
    assert item.files == ((folder / "page.html").resolve(),)


def test_a_page_file_that_is_a_fifo_is_refused_without_opening_it(tmp_path):
    os.mkfifo(tmp_path / "page.html")
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"question": "q?", "answers": ["x"], "file": "page.html"}) + "\n")
    with pytest.raises(InputError, match=r"page file page\.html is not a regular file"):
        load_dataset("qa", path)


def test_a_line_nested_deeper_than_the_recursion_limit_is_named(tmp_path):
    line = {"question": "q?", "answers": ["x"], "file": "page.html"}
    path = write(tmp_path, line, "[" * 100_000)
    with pytest.raises(InputError, match=r"set\.jsonl:2: JSON nested too deeply"):
        load_dataset("qa", path)


def test_labels_and_ids_are_one_safe_line(tmp_path):
    """``lang`` and ``location`` are printed in eval's tables: escape sequences (OSC, CSI,
    OSC 8 links), C1 controls and bidi overrides in them never reach the terminal."""
    line = {
        "id": "q\x1b[2J\u202e1",
        "question": "q?",
        "answers": ["x"],
        "file": "page.html",
        "lang": "\x1b]0;pwned\x07de\x9b2J",
        "location": "\x1b]8;;https://evil.example/\x1b\\table\x1b]8;;\x1b\\\nlist",
    }
    (item,) = load_dataset("qa", write(tmp_path, line))
    assert isinstance(item, QAItem)
    for text in (item.id, item.lang, item.location):
        assert not any(char in text for char in "\x1b\x07\x9b\u202e\n")
    assert item.lang.endswith("de2J") and "table" in item.location
