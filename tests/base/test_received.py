"""Text and JSON from another program made whole: surrogate halves joined or replaced, JSON
nested too deeply refused as malformed."""

from __future__ import annotations

import json

import pytest

from htmlrag_chat.base.received import Halves, TooDeep, loads, whole_text


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("plain text, accents é, CJK 中文, emoji 😀", "plain text, accents é, CJK 中文, emoji 😀"),
        ("\ud83d\ude00", "😀"),  # a pair in one string: joined
        ("a\ud83db", "a\ufffdb"),  # a lone high half
        ("a\ude00b", "a\ufffdb"),  # a lone low half
        ("\ude00\ud83d", "\ufffd\ufffd"),  # in the wrong order: no pair
        ("\ud83d\ud83d\ude00", "\ufffd😀"),
    ],
)
def test_whole_text_joins_pairs_and_replaces_lone_halves(text: str, whole: str) -> None:
    assert whole_text(text) == whole
    whole.encode("utf-8")  # what printing, SQLite and tokenizers need


def test_halves_split_between_pieces_are_joined() -> None:
    halves = Halves()
    pieces = ["Smile \ud83d", "\ude00 and \ud83d", " half \ud83d", "\ude00\ud83d"]
    out = [halves.feed(piece) for piece in pieces]
    assert out == ["Smile ", "😀 and ", "\ufffd half ", "😀"]
    assert halves.finish() == "\ufffd"  # a half that nothing completed
    assert halves.finish() == ""


def test_loads_makes_every_string_whole_and_refuses_deep_nesting() -> None:
    data = '{"id": "otter-\\ud83d", "\\ude00key": ["\\ud83d\\ude00", 3, null]}'
    assert loads(data) == {"id": "otter-\ufffd", "\ufffdkey": ["😀", 3, None]}
    assert loads(data, whole=False)["id"] == "otter-\ud83d"  # for Halves to join
    with pytest.raises(TooDeep):
        loads("[" * 100_000)
    with pytest.raises(ValueError):
        loads("{not json")
    assert loads(json.dumps({"a": [1, 2]}).encode()) == {"a": [1, 2]}
