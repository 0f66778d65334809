from __future__ import annotations

from htmlrag_chat.safety import one_line, terminal_safe


def test_escape_sequences_and_overrides_are_removed() -> None:
    hostile = "Title\x1b]0;pwned\x07 \x9b31m red\u202egnp.exe\r\n"
    assert terminal_safe(hostile) == "Title]0;pwned 31m redgnp.exe\n"


def test_ordinary_text_is_untouched() -> None:
    text = "Grüße, 東京 — tabs\tand\nlines [1]"
    assert terminal_safe(text) == text


def test_one_line_is_safe_and_collapses_whitespace() -> None:
    assert one_line("  Free\n\t[b]prizes[/b] \x1b[2J now ") == "Free [b]prizes[/b] [2J now"
