"""A reasoning model's think blocks never reach the answer, whole or split across chunks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from htmlrag_chat.reader.think import ThinkFilter, strip_think

REPLY = "<think>Lyon... the census says 522,250.</think>Lyon has 522,250 people [1]."


def streamed(chunks: list[str]) -> str:
    thinking = ThinkFilter()
    return "".join(thinking.feed(chunk) for chunk in chunks) + thinking.finish()


def test_a_think_block_is_dropped_and_the_answer_kept() -> None:
    assert strip_think(REPLY) == "Lyon has 522,250 people [1]."
    assert streamed([REPLY]) == "Lyon has 522,250 people [1]."


def test_an_unterminated_think_block_hides_everything_after_it() -> None:
    assert strip_think("Start. <think>still thinking when the tokens ran out") == "Start. "
    assert streamed(["Start. <thi", "nk>still thinking", " when"]) == "Start. "


def test_text_that_only_looks_like_a_tag_start_is_shown() -> None:
    assert streamed(["a < b and <th", "ings>"]) == "a < b and <things>"


@given(st.lists(st.integers(min_value=1, max_value=len(REPLY)), max_size=8))
def test_any_split_of_the_stream_gives_the_same_answer(cuts: list[int]) -> None:
    points = sorted(set(cuts))
    chunks = [REPLY[a:b] for a, b in zip([0, *points], [*points, len(REPLY)], strict=True)]
    assert streamed(chunks) == strip_think(REPLY)
