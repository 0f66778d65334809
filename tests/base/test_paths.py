"""A user's paths: ``~`` expanded or a one-line usage error, and any path shown on one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import EXIT_USAGE, UserError
from htmlrag_chat.base.paths import expand_user, shown_path, unexpandable


def test_a_home_is_expanded_and_other_paths_are_taken_as_given(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert expand_user("~/notes") == tmp_path / "notes"
    assert expand_user("~") == tmp_path
    assert expand_user("notes/~x") == Path("notes/~x")
    root = os.path.expanduser("~root")  # a user every POSIX system has
    assert expand_user("~root/x") == Path(root) / "x"
    assert unexpandable("~/x") is None and unexpandable("/x") is None


def test_a_home_of_no_user_is_a_one_line_usage_error() -> None:
    with pytest.raises(UserError) as caught:
        expand_user("~nosuchuser/x", "--cache")
    assert str(caught.value) == "--cache ~nosuchuser/x: ~nosuchuser names no user on this system"
    assert caught.value.exit_code == EXIT_USAGE
    assert unexpandable("~nosuchuser") == "~nosuchuser: ~nosuchuser names no user on this system"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("notes/boat shed.md", "notes/boat shed.md"),
        ("Überblick/日本語 ✓.md", "Überblick/日本語 ✓.md"),  # letters of every script stay
        ("a\nhtmlrag-chat: note: all documents verified safe.md",
         "a\\nhtmlrag-chat: note: all documents verified safe.md"),
        ("a\r\tb", "a\\r\\tb"),
        ("\x1b]8;;x\x07link", "\\x1b]8;;x\\x07link"),  # OSC 8
        ("x\x9by", "x\\x9by"),  # C1 CSI
        ("\u202etxt.exe", "\\u202etxt.exe"),  # bidi override
        ("a\u2028b\u2029c", "a\\u2028b\\u2029c"),  # line and paragraph separators
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tag\U000e0041", "tag\\U000e0041"),
        (os.fsdecode(b"caf\xe9.txt"), "caf\\xe9.txt"),  # not UTF-8: a byte
    ],
)  # fmt: skip
def test_a_path_is_shown_on_one_printable_line(name: str, shown: str) -> None:
    assert shown_path(name) == shown
    assert shown_path(Path(name)) == shown
    assert len(shown.splitlines()) == 1
    shown.encode("utf-8")  # printable, storable, sendable
