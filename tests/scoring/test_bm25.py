from __future__ import annotations

from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.scoring.bm25 import BM25Scorer


def tree_of(*paragraphs: str):
    html = "<body>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</body>"
    return build_block_tree(Document.from_pages([(Page("t"), clean_html(html))]), max_words=3)


def test_matching_block_scores_highest():
    tree = tree_of("cats and dogs", "apache license version", "the weather today")
    scores = BM25Scorer().score("Which license?", tree)
    assert scores.index(max(scores)) == 1
    assert scores[0] == scores[2] == 0.0


def test_rare_terms_weigh_more_than_common_ones():
    tree = tree_of("engine docker", "engine install", "engine apache", "engine run")
    scores = BM25Scorer().score("engine apache", tree)
    assert scores[2] > scores[0] > 0


def test_cjk_queries_match_by_character_bigrams():
    tree = tree_of("東京の天気", "大阪の食べ物", "京都")
    scores = BM25Scorer().score("東京", tree)
    assert scores[0] > scores[1] == scores[2] == 0.0  # 京都 shares a character, not a word


def test_empty_query_or_tree_scores_zero():
    assert BM25Scorer().score("", tree_of("a b", "c d")) == [0.0, 0.0]
