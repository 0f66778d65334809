from __future__ import annotations

from htmlrag_chat.eval.chunks import join_chunks, select_chunks, split_chunks
from htmlrag_chat.html.text import count_words
from htmlrag_chat.pruning.tokens import ApproxTokenCounter


def test_chunks_pack_whole_lines_up_to_the_word_limit():
    lines = [" ".join(f"w{i}x{j}" for j in range(30)) for i in range(10)]
    chunks = split_chunks("\n".join(lines), max_words=100)
    assert [count_words(chunk) for chunk in chunks] == [90, 90, 90, 30]
    assert chunks[0] == "\n".join(lines[:3])
    assert " ".join(" ".join(chunks).split()) == " ".join(" ".join(lines).split())


def test_long_lines_and_cjk_runs_are_split():
    long_line = " ".join(f"w{j}" for j in range(250))
    assert [count_words(c) for c in split_chunks(long_line, max_words=100)] == [100, 100, 50]
    cjk = "子" * 230
    chunks = split_chunks(f"intro\n{cjk}", max_words=100)
    assert "".join(chunks).replace("\n", "") == f"intro{cjk}"
    assert all(count_words(chunk) <= 100 for chunk in chunks)


def test_the_best_chunks_that_fit_in_reading_order():
    counter = ApproxTokenCounter()
    chunks = ["alpha " * 10, "beta " * 50, "gamma " * 10, "delta " * 10]
    costs = counter.count_many(chunks)
    scores = [0.1, 0.9, 0.8, 0.5]
    budget = costs[1] + costs[2] + costs[3] + 2  # beta and gamma, not delta (separators)
    chosen = select_chunks(chunks, scores, costs, budget, counter)
    assert chosen == [1, 2]
    assert join_chunks(chunks, chosen) == chunks[1] + "\n" + chunks[2]
    assert counter.count(join_chunks(chunks, chosen)) <= budget
    # A chunk too long for what is left is skipped, and smaller ones after it still fit.
    assert select_chunks(chunks, scores, costs, costs[2] + costs[3] + 3, counter) == [2, 3]
    assert select_chunks(chunks, scores, costs, 1, counter) == []
    assert select_chunks([], [], [], 100, counter) == []
