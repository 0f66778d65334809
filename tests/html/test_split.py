"""Long text runs are cut into pieces that can be pruned one by one, losing nothing."""

from __future__ import annotations

from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.split import pieces, split_long_text
from htmlrag_chat.html.text import count_words, visible_text
from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.pruning.tokens import ApproxTokenCounter
from htmlrag_chat.scoring.bm25 import BM25Scorer

SENTENCES = [f"Sentence number {n} tells about topic{n} in plain words." for n in range(90)]
LONG = " ".join(SENTENCES)  # 720 words in one run


def document(html: str) -> Document:
    return Document.from_pages([(Page("page"), clean_html(html))])


def test_pieces_join_back_to_the_text_and_respect_the_size():
    for text in (LONG, "word " * 1000, "漢字かな" * 300, "line one\nline two\n" * 200):
        cut = pieces(text, 50)
        assert "".join(cut) == text
        assert all(count_words(piece) <= 50 for piece in cut)
        assert len(cut) >= count_words(text) // 50


def test_pieces_end_at_sentence_ends_where_sentences_fit():
    cut = pieces(LONG, 40)
    assert all(piece.rstrip().endswith(".") for piece in cut)


def test_a_long_paragraph_is_split_into_blocks_with_the_same_visible_text():
    doc = document(f"<html><body><p>{LONG}</p></body></html>")
    split = split_long_text(doc, 64)
    assert split is not doc
    assert visible_text(split.root) == visible_text(doc.root)
    tree = build_block_tree(split, 64)
    assert len(tree.blocks) >= 720 // 64
    assert all(block.words <= 64 for block in tree.blocks)
    # The input is left as it was.
    assert len(build_block_tree(doc, 64).blocks) == 1


def test_text_that_already_fits_is_not_copied():
    doc = document("<html><body><p>short text</p><p>more short text</p></body></html>")
    assert split_long_text(doc, 64) is doc


def test_loose_text_and_tails_are_split_too():
    html = f"<html><body><div>{LONG}<p>middle</p>{LONG}</div></body></html>"
    doc = document(html)
    split = split_long_text(doc, 100)
    assert visible_text(split.root) == visible_text(doc.root)
    assert all(block.words <= 100 for block in build_block_tree(split, 100).blocks)


def test_preformatted_text_keeps_its_line_breaks():
    lines = "".join(f"value_{n} = compute({n})\n" for n in range(400))
    doc = document(f"<html><body><pre>{lines}</pre></body></html>")
    split = split_long_text(doc, 64)
    assert "".join(split.root.find(".//pre").itertext()) == lines


def test_a_one_paragraph_page_prunes_to_part_of_it_not_to_nothing():
    for text in (LONG, "字" * 3000):
        loaded = load_pages([PageInput("p.html", f"<p>{text}</p>".encode())])
        counter = ApproxTokenCounter()
        (result,) = prune_document(
            loaded.document, "topic42", [Stage(BM25Scorer(), 200, 64)], counter
        )
        html = result.result.document.to_html()
        assert 0 < counter.count(html) <= 200
        if text == LONG:
            assert "topic42" in html
