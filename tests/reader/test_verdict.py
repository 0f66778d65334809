"""A reader's Yes or No as a probability."""

from __future__ import annotations

import math

import pytest

from htmlrag_chat.reader.verdict import from_logits, from_reply, from_top, word_ids


def test_word_ids_take_each_spelling_s_first_token_and_drop_shared_ones() -> None:
    vocabulary = {"yes": [1], "Yes": [2], "YES": [3, 9], " yes": [4], " Yes": [5], "no": [6],
                  "No": [7], "NO": [7], " no": [8], " No": [4, 0]}  # fmt: skip
    yes, no = word_ids(lambda text: vocabulary[text])
    assert (yes, no) == ([1, 2, 3, 5], [6, 7, 8])  # 4 starts " yes" and " No"


def test_from_logits_is_the_share_of_yes_in_the_two_words_mass() -> None:
    logits = [0.0, math.log(3), 0.0, math.log(1), 5.0]
    assert from_logits(logits, [1], [3]) == pytest.approx(0.75)
    assert from_logits(logits, [1, 2], [3]) == pytest.approx(4 / 5)
    assert from_logits(logits, [], []) is None


def test_a_server_s_top_logprobs_and_its_bare_reply() -> None:
    top = [(" Yes", math.log(0.6)), ("no", math.log(0.2)), ("Maybe", math.log(0.2))]
    assert from_top(top) == pytest.approx(0.75)
    assert from_top([("Maybe", 0.0), ("x", -math.inf)]) is None
    assert from_reply("Yes.") == 1.0 and from_reply(" no, it does not") == 0.0
    assert from_reply("Maybe") is None and from_reply("") is None
