from __future__ import annotations

from lxml import etree

from htmlrag_chat.html.blocks import (
    BlockKind,
    Document,
    Page,
    build_block_tree,
    numbered_tags,
    render_path,
)
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.pathtags import to_numbered_html
from htmlrag_chat.html.text import count_words, visible_text


def document(*htmls: str) -> Document:
    return Document.from_pages([(Page(f"p{i}"), clean_html(h)) for i, h in enumerate(htmls)])


def words(n: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


def test_same_name_siblings_are_numbered():
    parent = etree.fromstring("<div><p/><div/><p/><!--c--><span/></div>")
    assert numbered_tags(parent) == ["p1", "div", "p2", None, "span"]


def test_pages_are_numbered_subtrees_and_blocks_know_their_page():
    doc = document(
        f"<body><div><p>{words(5, 'a')}</p><p>{words(5, 'b')}</p></div><p>{words(5)}</p></body>",
        f"<body><p>{words(3, 'c')}</p></body>",
    )
    tree = build_block_tree(doc, max_words=4)
    paths = {block.text: (render_path(block.path), block.page) for block in tree.blocks}
    assert paths[words(5, "a")] == ("<html1><body><div><p1>", 0)
    assert paths[words(5, "b")] == ("<html1><body><div><p2>", 0)
    assert paths[words(3, "c")] == ("<html2>", 1)
    assert render_path(("html1", "body", "div2", "p")) == "<html1><body><div2><p>"


def test_small_elements_are_single_blocks_and_large_ones_expand():
    doc = document(f"<body><div><p>{words(3)}</p><p>{words(3, 'x')}</p></div></body>")
    assert [render_path(b.path) for b in build_block_tree(doc, max_words=10).blocks] == ["<html>"]
    # The lone <div> was merged into <body> by cleaning.
    assert [render_path(b.path) for b in build_block_tree(doc, max_words=4).blocks] == [
        "<html><body><p1>",
        "<html><body><p2>",
    ]


def test_loose_text_of_an_expanded_element_is_a_block_however_short():
    doc = document(f"<body><div>lead <p>{words(8)}</p> tail</div><p>{words(8, 'z')}</p></body>")
    tree = build_block_tree(doc, max_words=8)
    text_blocks = [b for b in tree.blocks if b.kind is BlockKind.TEXT]
    paths = [(render_path(b.path), b.text) for b in text_blocks]
    assert paths == [("<html><body><div>", "lead tail")]


def test_blocks_partition_every_word(fixture_page):
    doc = document(fixture_page.data.decode("utf-8"))
    total = count_words(visible_text(doc.root))
    for max_words in (16, 64, 256):
        tree = build_block_tree(doc, max_words)
        assert sum(block.words for block in tree.blocks) >= total * 0.99
        for block in tree.blocks:
            if block.kind is BlockKind.ELEMENT:
                assert block.words <= max_words or len(block.element) == 0


def test_cjk_counts_per_character():
    assert count_words("東京タワー is tall") == 7
    doc = document("<body><p>東京タワーは高い</p><p>" + "字" * 30 + "</p></body>")
    tree = build_block_tree(doc, max_words=10)
    assert [b.words for b in tree.blocks] == [8, 30]


def test_blocks_are_in_document_order():
    tree = build_block_tree(
        document("<body>" + "".join(f"<p>{words(20, str(i))}</p>" for i in range(5)) + "</body>"),
        10,
    )
    positions = [block.position for block in tree.blocks]
    assert positions == sorted(positions)
    assert [block.index for block in tree.blocks] == list(range(len(tree.blocks)))


def test_model_html_names_tags_as_the_paths_do():
    doc = document(
        f"<body><div><p>{words(5)}</p><p>{words(5, 'q')}</p></div>"
        f"<div>{words(5, 'r')}</div></body>",
        "<body><p>second page</p></body>",
    )
    tree = build_block_tree(doc, max_words=4)
    html = to_numbered_html(doc)
    assert "<html1><body><div1><p1>w0" in html
    for block in tree.blocks:
        cursor = 0
        for tag in block.path:
            cursor = html.index(f"<{tag}>", cursor)
