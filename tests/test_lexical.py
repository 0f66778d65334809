"""BM25 terms and scores over plain texts, shared by the block scorer and the extractive
reader."""

from __future__ import annotations

from htmlrag_chat.lexical import bm25_scores, terms


def test_terms_lowercase_split_punctuation_and_cjk():
    assert terms("Docker's Engine, v2.0! 東京タワー_x") == [
        "docker", "s", "engine", "v2", "0", "東", "京", "タ", "ワ", "ー", "x",
    ]  # fmt: skip


def test_texts_without_a_query_term_score_zero_and_rare_terms_weigh_more() -> None:
    texts = ["engine docker", "engine install", "engine apache", "nothing here"]
    scores = bm25_scores("engine apache", texts)
    assert scores[2] > scores[0] == scores[1] > 0
    assert scores[3] == 0.0
    assert bm25_scores("", texts) == [0.0] * 4
