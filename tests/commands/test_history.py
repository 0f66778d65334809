"""``history``: the kept conversations listed, shown and exported through the real CLI, on
a real cache file written by the same ``ChatSession`` the chat app uses."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.cli import main
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.reader import Source
from htmlrag_chat.store.db import Store

SOURCE = Source(1, "https://a.test/arkit", "ARKit \x1b[31mdocs", "<p>ARKit grabs depth.</p>", "")


def answer(question: str, text: str, reader: str = "extractive", model: str = "extractive"):
    return Answer(
        question, text, reader, model, [], 0, [], Research([SOURCE], [question], rounds=1)
    )


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """Three conversations: an old one answered locally, a two-turn one answered by a
    server, and a newest one whose question was never answered."""
    path = tmp_path / "c.sqlite3"
    with Store.open(path) as store:
        old = ChatSession(store)
        asked = old.question_asked("Wie heißt die Straße?")
        old.answered(asked, answer("Wie heißt die Straße?", "Hauptstraße [1]."))
        two = ChatSession(store)
        for question, text in (("Which framework?", "ARKit [1]."), ("Since when?", "iOS 13 [1].")):
            two.answered(two.question_asked(question), answer(question, text, "openai", "m"))
        ChatSession(store).question_asked("Stopped one")
    return path


def history(capsys: pytest.CaptureFixture[str], cache: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--cache", str(cache), "history", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_list_is_newest_first_with_time_turns_reader_and_title(cache, capsys):
    code, out, _ = history(capsys, cache)
    header, *rows = out.splitlines()
    assert code == 0 and header.split() == ["ID", "TIME", "TURNS", "READER", "TITLE"]
    reader, title = header.index("READER"), header.index("TITLE")
    assert [(row.split()[0], row[reader:title].strip(), row[title:]) for row in rows] == [
        ("3", "-", "Stopped one"),
        ("2", "openai m", "Which framework?"),
        ("1", "extractive", "Wie heißt die Straße?"),
    ]
    when = re.compile(r" *\d+ +\d{4}-\d\d-\d\d \d\d:\d\d +\d+ +")  # id, local time, turns
    assert all(when.fullmatch(row[:reader]) for row in rows)
    assert [row[:reader].split()[-1] for row in rows] == ["1", "2", "1"]  # questions asked


def test_json_limit_and_search(cache, capsys):
    code, out, _ = history(capsys, cache, "--json", "-n", "2")
    listed = json.loads(out)
    assert code == 0 and [c["id"] for c in listed] == [3, 2]
    assert listed[1] | {"created_at": None, "updated_at": None} == {
        "id": 2,
        "title": "Which framework?",
        "created_at": None,
        "updated_at": None,
        "turns": 2,
        "reader": "openai",
        "model": "m",
    }
    assert listed[0]["reader"] is None and "T" in listed[0]["updated_at"]
    found = json.loads(history(capsys, cache, "--search", "STRASSE", "--json")[1])
    assert [c["id"] for c in found] == [1]  # in the question, any case
    found = json.loads(history(capsys, cache, "-s", "ios 13", "--json")[1])
    assert [c["id"] for c in found] == [2]  # in an answer
    code, out, err = history(capsys, cache, "--search", "nowhere")
    assert code == 0 and out == "" and "No conversations matching 'nowhere'" in err


def test_show_prints_the_markdown_the_app_exports(cache, capsys, tmp_path):
    code, out, _ = history(capsys, cache, "show", "2")
    with Store.open(cache) as store:
        session = ChatSession(store)
        session.open(2)
        exported = session.export(tmp_path)  # what Ctrl+S writes
    assert code == 0 and out == exported.read_text(encoding="utf-8")
    assert out.startswith("# Which framework?\n\n## Which framework?\n\nARKit [1].")
    assert "- [1] [ARKit \\[31mdocs](<https://a.test/arkit>)" in out and "\x1b" not in out


def test_show_json_has_every_message_with_its_answers(cache, capsys):
    code, out, _ = history(capsys, cache, "show", "2", "--json")
    record = json.loads(out)
    assert code == 0 and record["id"] == 2 and record["turns"] == 2
    assert [m["content"] for m in record["messages"]] == ["Which framework?", "Since when?"]
    (first,) = record["messages"][0]["answers"]
    assert first["text"] == "ARKit [1]." and first["reader"] == "openai:m"
    assert first["sources"][0]["url"] == SOURCE.url and "T" in first["created_at"]
    # Marked as ask --json marks them: this answer was stored without checked sentences.
    assert first["sources"][0]["cited"] is False
    assert json.loads(history(capsys, cache, "--json", "show", "2")[1]) == record


def test_export_writes_the_file_ctrl_s_writes(cache, capsys, tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    code, out, _ = history(capsys, cache, "export", "2", "--out-dir", str(folder))
    path = Path(out.strip())
    assert code == 0 and path == folder / "conversation-2-which-framework.md"
    assert path.read_text(encoding="utf-8") == history(capsys, cache, "show", "2")[1]
    # Again: the file there is kept unless --force says to write over it.
    path.write_text("my notes", encoding="utf-8")
    code, out, err = history(capsys, cache, "export", "2", "--out-dir", str(folder))
    assert (
        code == 2 and out == "" and err == f"htmlrag-chat: {path} exists: --force writes over it\n"
    )
    assert path.read_text(encoding="utf-8") == "my notes"
    assert history(capsys, cache, "export", "2", "--out-dir", str(folder), "--force")[0] == 0
    assert path.read_text(encoding="utf-8") == history(capsys, cache, "show", "2")[1]


@pytest.mark.parametrize("action", ["show", "export"])
def test_an_unknown_id_is_one_line(cache, capsys, action):
    code, out, err = history(capsys, cache, action, "9")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no conversation 9" in err and "htmlrag-chat history lists them" in err


def test_export_into_a_missing_folder_is_one_line(cache, capsys, tmp_path):
    code, _, err = history(capsys, cache, "export", "1", "--out-dir", str(tmp_path / "no"))
    assert code == 2 and err.count("\n") == 1 and "cannot write" in err


def test_an_empty_history_says_so(tmp_path, capsys):
    code, out, err = history(capsys, tmp_path / "new.sqlite3")
    assert code == 0 and out == "" and "No conversations in" in err


def test_rm_deletes_one_conversation_and_keeps_the_others(cache, capsys):
    code, out, err = history(capsys, cache, "rm", "2")
    assert code == 0 and out == "" and err.strip() == "deleted conversation 2: Which framework?"
    _, out, _ = history(capsys, cache, "--json")
    assert [row["id"] for row in json.loads(out)] == [3, 1]
    code, _, err = history(capsys, cache, "rm", "2")
    assert code == 2 and "no conversation 2" in err and err.count("\n") == 1


def test_rm_refuses_a_replay_and_leaves_the_cache_alone(cache, capsys):
    code = main(["--cache", str(cache), "--replay", "history", "rm", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "read-only" in err
    _, out, _ = history(capsys, cache, "--json")
    assert [row["id"] for row in json.loads(out)] == [3, 2, 1]


@pytest.mark.parametrize(
    "argv",
    [
        ["history", "show", "99999999999999999999999"],
        ["history", "export", "99999999999999999999999"],
        ["history", "-n", str(10**20)],
        ["ask", "--conversation", str(10**20), "more?"],
    ],
)
def test_numbers_past_what_the_cache_can_hold_are_one_usage_error(cache, argv):
    """Once an OverflowError inside SQLite (issue 21): now refused as they are parsed."""
    result = subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", "--cache", str(cache), *argv],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "too large" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_the_markdown_of_a_stored_answer_keeps_no_script_link(tmp_path, capsys):
    """An answer stored before links were checked still exports without them."""
    path = tmp_path / "c.sqlite3"
    with Store.open(path) as store:
        session = ChatSession(store)
        message = session.question_asked("Where?")
        store.add_answer(
            message, reader="openai:m", text="Paris [1](javascript:alert(1)) [x](https://ok.test/)",
            sources=[], citations=[], flags=[],
        )  # fmt: skip
    code, out, _ = history(capsys, path, "show", "1")
    assert code == 0 and "Paris [1] [x](https://ok.test/)" in out and "javascript" not in out
    code, out, _ = history(capsys, path, "export", "1", "--out-dir", str(tmp_path))
    exported = Path(out.strip()).read_text(encoding="utf-8")
    assert code == 0 and "javascript" not in exported and "Paris [1]" in exported


def test_the_json_list_sanitises_titles_as_show_json_does(tmp_path, capsys):
    """A title is the first question, which an agent can send over MCP: C1 controls and
    bidi overrides once reached the terminal through ``history --json``."""
    path = tmp_path / "c.sqlite3"
    question = "safe\u009b2J?\u202egnp.exe \x1b]0;pwned\x07 <|eot_id|>"
    with Store.open(path) as store:
        ChatSession(store).question_asked(question)
    code, out, _ = history(capsys, path, "--json")
    (listed,) = json.loads(out)
    shown = json.loads(history(capsys, path, "show", "1", "--json")[1])
    assert code == 0 and listed["title"] == shown["title"]
    assert not any(char in out for char in "\u009b\u202e\x1b\x07")
    assert listed["title"].startswith("safe2J?gnp.exe ]0;pwned") and "<|eot_id|>" not in out
