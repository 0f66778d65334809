"""A reasoning model's think blocks never reach the answer, whole or split across chunks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from htmlrag_chat.reader.think import (
    OPEN,
    ThinkFilter,
    opened_by_template,
    opens_reasoning,
    strip_think,
)

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


HARMONY = (
    "<|channel|>analysis<|message|>The user asks about Lyon; the census says 522,250.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Lyon has 522,250 people [1].<|return|>"
)


@pytest.mark.parametrize(
    "reply",
    [
        "Lyon... the census says 522,250.</think>Lyon has 522,250 people [1].",  # R1: no <think>
        "<think>Lyon<think>a census</think>says 522,250.</think>Lyon has 522,250 people [1].",
        "<think >Lyon... 522,250.</think >Lyon has 522,250 people [1].",
        "<think\n>Lyon... 522,250.</think\t>Lyon has 522,250 people [1].",
        "<thinking>Lyon... 522,250.</thinking>Lyon has 522,250 people [1].",
        "<THINK>Lyon... 522,250.</Think>Lyon has 522,250 people [1].",
        OPEN + "<think>\nLyon... 522,250.</think>Lyon has 522,250 people [1].",  # opened twice
        OPEN + "Lyon... 522,250.</think>Lyon has 522,250 people [1].",
        HARMONY,
        "<|start|>assistant<|channel|>analysis<|message|>Lyon... 522,250.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.census <|constrain|>json"
        '<|message|>{"city": "Lyon"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>Lyon has 522,250 people [1].",
    ],
    ids=["r1", "nested", "space", "spaces", "thinking", "case", "reopened", "opened", "harmony",
         "harmony-tool"],
)  # fmt: skip
def test_every_form_of_reasoning_is_dropped(reply: str) -> None:
    assert strip_think(reply) == "Lyon has 522,250 people [1]."


@pytest.mark.parametrize("reply", [REPLY, HARMONY])
@given(cuts=st.lists(st.integers(min_value=1, max_value=200), max_size=8))
def test_every_form_gives_the_same_answer_however_it_is_cut(reply: str, cuts: list[int]) -> None:
    points = sorted({cut for cut in cuts if cut < len(reply)})
    chunks = [reply[a:b] for a, b in zip([0, *points], [*points, len(reply)], strict=True)]
    assert streamed(chunks) == strip_think(reply) == "Lyon has 522,250 people [1]."


def test_a_close_with_no_open_block_takes_back_what_was_shown() -> None:
    """The template opened the block: the stream shows the reasoning until the tag that
    closes it arrives, then says that all of it was reasoning."""
    thinking = ThinkFilter()
    assert thinking.feed("Lyon... the census ") == "Lyon... the census "
    assert not thinking.restarted
    assert thinking.feed("says 522,250.</thi") == "says 522,250."
    assert thinking.feed("nk>Lyon has 522,250") == "Lyon has 522,250"
    assert thinking.restarted
    assert thinking.feed(" people.") + thinking.finish() == " people."
    # In one piece nothing was shown before the tag: nothing to take back.
    whole = ThinkFilter()
    assert whole.feed("Lyon... </think>Lyon.") == "Lyon." and not whole.restarted


def test_a_tag_defused_as_safety_defuses_page_text_ends_nothing() -> None:
    assert strip_think("<think>a < /think > b</think>Lyon.") == "Lyon."
    assert strip_think("Lyon < /think > stays.") == "Lyon < /think > stays."


def test_text_between_harmony_messages_and_unfinished_analysis_are_hidden() -> None:
    assert strip_think("<|channel|>analysis<|message|>still thinking when it ran out") == ""
    assert strip_think("<|channel|>final<|message|>Lyon.<|end|>stray") == "Lyon."
    assert strip_think("plain <|channel|>") == "plain "


def test_a_prompt_that_opens_a_think_block_is_recognised() -> None:
    assert opens_reasoning("<\uff5cAssistant\uff5c><think>\n")  # DeepSeek-R1
    assert opens_reasoning("<|im_start|>assistant\n<think>")
    assert not opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert not opens_reasoning("<|im_start|>assistant\n")


@pytest.mark.parametrize(
    ("model", "opened"),
    [
        ("deepseek-r1:7b", True),
        ("DeepSeek-R1-Distill-Qwen-7B", True),
        ("qwq:32b", True),
        ("Qwen/QwQ-32B", True),
        ("llama3.1:8b", False),
        ("qwen3:8b", False),  # Qwen3 writes its own <think>
        ("command-r7b", False),
    ],
)
def test_models_whose_template_opens_the_block_are_known_by_name(model: str, opened: bool) -> None:
    assert opened_by_template(model) is opened


_PIECES = ["<think>", "</think>", "<thinking >", "< /think >", "<", "/", "think", ">", "a", " ",
           "\n", "<|channel|>", "<|message|>", "<|end|>", "<|start|>", "final", "analysis",
           "<|", "|>", "x<th", "ink>", "</"]  # fmt: skip


def taken_back(chunks: list[str]) -> str:
    """What a reader of the stream ends with: the text shown, less what a restart took
    back."""
    thinking = ThinkFilter()
    shown = ""
    for chunk in chunks:
        text = thinking.feed(chunk)
        if thinking.restarted:
            shown, thinking.restarted = "", False
        shown += text
    return shown + thinking.finish()


@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=10),
)
def test_a_stream_read_with_its_restarts_ends_as_the_whole_text_does(
    pieces: list[str], cuts: list[int]
) -> None:
    text = "".join(pieces)
    points = sorted({cut for cut in cuts if cut < len(text)})
    chunks = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert taken_back(chunks) == strip_think(text)
