"""Code and quoted text in answers: found in a stream as in the whole, shown verbatim."""

from __future__ import annotations

import html
import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from htmlrag_chat.reader.literal import CodeScanner, escape_markdown, unescape_markdown


def literal_of(text: str) -> list[str]:
    return [piece for literal, piece in CodeScanner().feed(text, final=True) if literal]


@pytest.mark.parametrize(
    ("text", "literal"),
    [
        ("Use `arr[0]` for the first [1].", ["`arr[0]`"]),
        ("```python\nx[1] = 2\n```\nThen [2].", ["```python\nx[1] = 2\n```\n"]),
        ("a ``code ` with`` tick [1]", ["``code ` with``"]),
        ("an unmatched ` tick [9]\nnext `line` [1]", ["`line`"]),  # a lone tick is text
        ("  ~~~\ncode [3]\n  ~~~~\nafter [1]", ["~~~\ncode [3]\n  ~~~~\n"]),
        ("```inline``` and [1]", ["```inline```"]),  # a tick on the line: not a fence
        ("\\`not code [1]\\` end", ["\\`", "\\`"]),  # escaped ticks: literal, no code
        ("\\[3\\] and \\\\[1]", ["\\[", "\\]", "\\\\"]),  # "\\\\" escapes the backslash
        ("- item\n    ```\n    y[2]\n    ```\n- next [1]", ["```\n    y[2]\n    ```\n"]),
        ("```\nnever closed [1]", ["```\nnever closed [1]"]),
        ("text ``` mid-line ``` [1]", ["``` mid-line ```"]),
    ],
)
def test_code_spans_fences_and_escapes_are_literal(text: str, literal: list[str]) -> None:
    assert literal_of(text) == literal


def scanned_in_pieces(text: str, cuts: list[int]) -> list[tuple[bool, str]]:
    scanner = CodeScanner()
    pieces: list[tuple[bool, str]] = []
    for start, end in pairwise([0, *sorted(cuts), len(text)]):
        pieces += scanner.feed(text[start:end])
    pieces += scanner.feed("", final=True)
    merged: list[tuple[bool, str]] = []
    for code, piece in pieces:
        if merged and merged[-1][0] == code:
            merged[-1] = (code, merged[-1][1] + piece)
        else:
            merged.append((code, piece))
    return merged


_PIECES = ["`", "``", "```", "~~~", "\\", "\n", " ", "    ", "x[1]", "[9]", "a", "python", "."]


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), st.text()),
    fractions=st.lists(st.floats(0, 1), max_size=12),
)
def test_a_stream_is_split_as_the_whole_text_is(text: str, fractions: list[float]) -> None:
    cuts = [int(fraction * len(text)) for fraction in fractions]
    assert scanned_in_pieces(text, cuts) == CodeScanner().feed(text, final=True)
    assert "".join(piece for _, piece in CodeScanner().feed(text, final=True)) == text


PARSER = MarkdownIt("gfm-like")  # the chat app's Markdown widget parses with this


def shown(markdown: str) -> str:
    """The text a reader sees of one Markdown list item."""
    return html.unescape(re.sub(r"<[^>]+>", "", PARSER.render(markdown))).strip("\n")


_QUOTE_PIECES = [
    *"ab1 .,;:!?*_`~[]()<>&#|\\-+='\"{}/@$%^é",
    *["https://x.y/a_b?c=1&d", "www.ex.com", "[3]", "&amp;", "&#65;", "1.", "9)", "**"],
    *["__", "<b>", "x[1]", "# ", "> ", "- ", "~~"],
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_QUOTE_PIECES), min_size=1, max_size=14).map("".join))
def test_escaped_text_renders_as_itself(text: str) -> None:
    text = " ".join(text.split())  # quotes come with their whitespace collapsed
    if text:
        assert shown("- " + escape_markdown(text)) == text
        assert unescape_markdown(escape_markdown(text)) == text


def test_a_quoted_footnote_is_escaped_out_of_being_a_citation() -> None:
    quote = "The Eiffel tower stands in Paris [3] and was finished in 1889 [2]."
    assert escape_markdown(quote) == (
        "The Eiffel tower stands in Paris \\[3\\] and was finished in 1889 \\[2\\]."
    )
