"""Each block's context: its page title and the nearest heading before it on its page."""

from __future__ import annotations

from htmlrag_chat.html.blocks import Document, Page, build_block_tree, page_title
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.headings import heading_context


def two_pages() -> Document:
    first = clean_html(
        "<html><head><title>Rory McIlroy</title></head><body>"
        "<p>Intro paragraph before any heading.</p>"
        "<h2>Career</h2><p>He won it in 2011 and again later.</p>"
        "<h2>Personal life</h2><p>He lives in Florida.</p></body></html>"
    )
    second = clean_html(
        "<html><head><title>Golf</title></head><body><p>Second page text about clubs.</p>"
        "<p>Another paragraph about golf balls.</p></body></html>"
    )
    return Document.from_pages([(Page("a", page_title(first)), first), (Page("b", "Golf"), second)])


def context_of(text: str) -> str:
    tree = build_block_tree(two_pages(), 8)
    (index,) = [i for i, block in enumerate(tree.blocks) if block.text.startswith(text)]
    return heading_context(tree)[index]


def test_a_block_gets_its_title_and_nearest_heading():
    assert context_of("He won it") == "Rory McIlroy - Career"
    assert context_of("He lives") == "Rory McIlroy - Personal life"


def test_before_any_heading_only_the_title():
    assert context_of("Intro paragraph") == "Rory McIlroy"


def test_headings_do_not_leak_into_the_next_page():
    assert context_of("Second page") == "Golf"


def test_a_heading_is_not_its_own_context():
    assert context_of("Personal life") == "Rory McIlroy - Career"
