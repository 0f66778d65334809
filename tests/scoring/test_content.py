"""Main content by trafilatura's reading of a real page."""

from __future__ import annotations

from htmlrag_chat.html.blocks import build_block_tree
from htmlrag_chat.pipeline import PageInput, load_pages
from htmlrag_chat.scoring.content import main_content, shingles

ARTICLE = " ".join(
    f"The river town number {n} grew around its old stone bridge and market square."
    for n in range(12)
)
PAGE = (
    "<html><head><title>Towns</title></head><body>"
    "<nav><ul>" + "".join(f"<li>Menu entry {n}</li>" for n in range(12)) + "</ul></nav>"
    f"<article><h1>River towns</h1><p>{ARTICLE}</p><p>{ARTICLE}</p></article>"
    "<footer><p>Copyright 2024 Example Media, all rights reserved, privacy and cookies.</p>"
    "</footer></body></html>"
)


def test_the_article_is_main_content_and_the_menu_and_footer_are_not():
    tree = build_block_tree(load_pages([PageInput("p.html", PAGE.encode())]).document, 64)
    flags = main_content(tree)
    by_text = {block.text[:20]: flag for block, flag in zip(tree.blocks, flags, strict=True)}
    assert any(flag for text, flag in by_text.items() if text.startswith("The river town"))
    assert not any(flag for text, flag in by_text.items() if text.startswith(("Menu", "Copyright")))


def test_shingles_are_word_triples():
    assert shingles("A b c d") == ["a b c", "b c d"]
    assert shingles("two words") == ["two words"] and shingles("  ") == []
