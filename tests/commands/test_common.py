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
