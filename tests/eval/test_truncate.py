from __future__ import annotations

import pytest

from htmlrag_chat.eval.truncate import truncate
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from tests.conftest import PAGES


@pytest.mark.parametrize("budget", [1, 7, 100, 512, 4096])
def test_the_longest_prefix_that_fits(tiny_counter, budget):
    text = PAGES[1].data.decode("utf-8")
    cut = truncate(text, budget, tiny_counter)
    assert text.startswith(cut)
    assert tiny_counter.count(cut) <= budget
    if cut != text:
        assert tiny_counter.count(text[: len(cut) + 8]) > budget


def test_a_text_within_budget_is_returned_whole():
    assert truncate("short text", 10, ApproxTokenCounter()) == "short text"
    assert truncate("", 1, ApproxTokenCounter()) == ""


def test_dense_text_widens_the_search_window(tiny_counter):
    text = "子どもへの体罰を禁止する法律ができる。" * 200  # several tokens per character
    cut = truncate(text, 300, tiny_counter)
    assert 0 < tiny_counter.count(cut) <= 300 < tiny_counter.count(text[: len(cut) + 4])
