"""Replay spellings: ``--replay`` is a flag and never takes the next word; the file to replay
goes after ``=`` or ``--replay-db``. Parsed by the real parser of the CLI."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from htmlrag_chat.cli import build_parser
from htmlrag_chat.commands.ask import run_ask
from htmlrag_chat.commands.common import cache_origin, replaying
from htmlrag_chat.commands.web import run_search

Q = "how many times has rory mcilroy won the masters?"


@pytest.mark.parametrize(
    ("argv", "db"),
    [
        (["--cache", "rec.sqlite", "ask", "--replay", Q], "rec.sqlite"),
        (["--replay", "ask", Q], None),
        (["ask", Q, "--replay"], None),
        (["--replay", "--cache", "rec.sqlite", "ask", Q], "rec.sqlite"),
        (["--replay=rec.sqlite", "ask", Q], "rec.sqlite"),
        (["ask", "--replay=rec.sqlite", Q], "rec.sqlite"),
        (["ask", "--replay-db", "rec.sqlite", Q], "rec.sqlite"),
        (["--cache", "other.sqlite", "--replay-db", "rec.sqlite", "ask", Q], "rec.sqlite"),
    ],
)
def test_every_spelling_keeps_the_question_and_replays(argv: list[str], db: str | None) -> None:
    args = build_parser().parse_args(argv)
    assert args.handler is run_ask and args.question == Q and replaying(args)
    if db is not None:
        assert cache_origin(args)[0] == Path(db)


def test_the_command_name_is_never_taken_as_the_file() -> None:
    args = build_parser().parse_args(["--replay", "search", "q"])
    assert args.handler is run_search and args.query == "q" and replaying(args)


def test_words_after_a_double_dash_are_left_alone() -> None:
    args = build_parser().parse_args(["ask", "--", "--replay=x"])
    assert args.question == "--replay=x" and not replaying(args)


def test_no_replay_option_means_record_mode() -> None:
    assert not replaying(build_parser().parse_args(["--cache", "c.sqlite", "ask", Q]))


def test_an_empty_file_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as usage:
        build_parser().parse_args(["--replay=", "ask", Q])
    assert usage.value.code == 2 and "needs the file to replay" in capsys.readouterr().err


def test_an_error_line_never_carries_an_escape_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Whatever a one-line error quotes (here a file name; elsewhere a server's words) is
    printed without the controls that would retitle the window or clear the screen."""
    from htmlrag_chat.cli import main

    name = tmp_path / "\x1b]0;owned\x07page\x1b[2J\x9b31m.html"
    assert main(["clean", str(name)]) == 3
    err = capsys.readouterr().err
    assert "owned" in err and "page" in err
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f]", err), repr(err)


def _web_rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of the web cache's tables (not the conversations)."""
    import sqlite3

    from htmlrag_chat.store.schema import CACHE_TABLES

    with sqlite3.connect(path) as db:
        return {
            table: db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
            for table in CACHE_TABLES
        }


def _history(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    import json

    from htmlrag_chat.cli import main

    capsys.readouterr()
    assert main([*argv, "history", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_replayed_ask_and_its_follow_up_are_kept_and_the_recording_is_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--replay-db DB``: the recording stays as it was, byte for byte; the exchanges go to
    the cache file (here ``$HTMLRAG_CHAT_CACHE``), where ``history`` lists them."""
    from htmlrag_chat.cli import main
    from htmlrag_chat.conversations.session import title_for
    from tests.conftest import import_demo
    from tests.tui.conftest import QUESTION

    recording = import_demo(tmp_path)
    before = recording.read_bytes()
    monkeypatch.setenv("HTMLRAG_CHAT_CACHE", str(tmp_path / "mine.db"))
    replay = ["--replay-db", str(recording)]
    assert (
        main([*replay, "ask", "--reader", "extractive", "--pruner", "bm25", QUESTION["question"]])
        == 0
    )
    assert main([*replay, "ask", "-c", "--reader", "extractive", "Which iPhones get it?"]) == 0
    (kept,) = _history(capsys)
    assert kept["turns"] == 2 and kept["title"] == title_for(QUESTION["question"])
    assert recording.read_bytes() == before


def test_under_replay_the_replayed_file_keeps_them_and_its_web_cache_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from htmlrag_chat.cli import main
    from tests.conftest import import_demo
    from tests.tui.conftest import QUESTION

    cache = import_demo(tmp_path)
    web = _web_rows(cache)
    argv = ["--cache", str(cache), "--replay", "ask", "--reader", "extractive", "--pruner", "bm25"]
    assert main([*argv, QUESTION["question"]]) == 0
    assert [c["turns"] for c in _history(capsys, "--cache", str(cache))] == [1]
    assert _web_rows(cache) == web


def test_a_history_file_that_cannot_be_used_is_said_and_the_answer_still_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from htmlrag_chat.cli import main
    from tests.conftest import import_demo
    from tests.tui.conftest import GOLD, QUESTION

    recording = import_demo(tmp_path)
    damaged = tmp_path / "mine.db"
    damaged.write_bytes(b"not a database, and more than a header's worth of it" * 100)
    monkeypatch.setenv("HTMLRAG_CHAT_CACHE", str(damaged))
    argv = ["--replay-db", str(recording), "ask", "--reader", "extractive", "--pruner", "bm25"]
    assert main([*argv, QUESTION["question"]]) == 0
    out, err = capsys.readouterr()
    assert GOLD in out
    assert f"this exchange is not kept: {damaged} cannot be used (" in err
