"""Main content by trafilatura's reading of a real page."""

from __future__ import annotations

from htmlrag_chat.html.blocks import build_block_tree
from htmlrag_chat.html.split import split_long_text
from htmlrag_chat.pruning.pipeline import PageInput, load_pages
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


def test_pieces_of_a_long_paragraph_without_spaces_are_main_content():
    """A Japanese article is one "word" per paragraph; cut into pieces (``html.split``) it
    must still be found in the main text, or the fused stage would discard it whenever
    another paragraph of the page (one with spaces) is recognised as content."""
    sentence = "東京の天気は明日晴れ時々曇りで、気温は平年より高くなる見込みです。"
    page = (
        "<html><head><title>東京の天気</title></head><body>"
        "<nav><ul>" + "".join(f"<li><a href='/{n}'>メニュー{n}</a></li>" for n in range(12))
        + f"</ul></nav><article><h1>東京の天気</h1><p>{sentence * 20}</p>"
        "<p>Reported by the weather desk of the Tokyo bureau in 2024.</p></article>"
        "</body></html>"
    )  # fmt: skip
    document = load_pages([PageInput("ja.html", page.encode())]).document
    tree = build_block_tree(split_long_text(document, 32), 32)
    flags = main_content(tree)
    pieces = [flag for block, flag in zip(tree.blocks, flags, strict=True) if "晴れ" in block.text]
    assert len(pieces) > 3 and all(pieces)
    menu = [
        flag for block, flag in zip(tree.blocks, flags, strict=True) if "メニュー" in block.text
    ]
    assert menu and not any(menu)


def test_shingles_are_term_triples_with_cjk_characters_as_terms():
    assert shingles("A b, c d") == ["a b c", "b c d"]
    assert shingles("two words") == ["two words"] and shingles("  ") == []
    assert shingles("東京です") == ["東 京 で", "京 で す"]
