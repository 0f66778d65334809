"""BM25 terms and scores over plain texts, shared by the block scorer and the extractive
reader."""

from __future__ import annotations

import pytest

from htmlrag_chat.lexical import bm25, bm25_by_term, bm25_scores, sum_by_text, terms


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


def test_bm25_by_term_splits_each_text_score_by_the_words_that_matched() -> None:
    texts = [terms("cat sleeps on the sofa"), terms("dog on the sofa"), terms("trains")]
    query = terms("cat sofa")
    shares = bm25_by_term(query, texts)
    assert set(shares) == {"cat", "sofa"}
    assert shares["cat"][1] == shares["cat"][2] == 0.0 and shares["cat"][0] > 0
    assert sum_by_text(shares, 3) == pytest.approx(bm25(query, texts))
    assert bm25_by_term(terms("plane"), texts) == {}  # no text holds it
