"""Each type of document becomes a cleaned page with a title: Markdown with the structure a
page of the same content has, text in paragraphs, HTML cleaned as a page is."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents.convert import convert
from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def tags(html: bytes) -> list[str]:
    return [element.tag for element in parse(html).iter() if isinstance(element.tag, str)]


def test_markdown_gets_the_block_structure_of_the_same_page_in_html() -> None:
    path = FIXTURES / "notes" / "beekeeping.md"
    converted = convert(path, "markdown", path.read_bytes())
    assert converted.title == "Beekeeping log"  # the front matter's
    same = (
        "<html><head><title>Beekeeping log</title></head><body><h1>Hives</h1>"
        "<p>The blue hive swarmed on 14 May 2024; the swarm was caught by Orla Vance and"
        " housed in a spare box.</p><h2>Frames</h2><table><thead><tr><th>Hive</th>"
        "<th>Frames of brood</th><th>Queen marked</th></tr></thead><tbody><tr><td>Blue</td>"
        "<td>9</td><td>yes</td></tr><tr><td>Red</td><td>7</td><td>no</td></tr></tbody>"
        "</table><h2>Tasks</h2><ul><li>Feed sugar syrup in September</li><li>Check the red"
        " hive for varroa mites in August</li></ul></body></html>"
    )
    _, cleaned = clean_page(PageInput("same.html", same.encode()))
    assert tags(converted.html) == tags(page_html(cleaned))
    assert converted.text == visible_text(cleaned)
    assert "---" not in converted.text and "title:" not in converted.text
    # Blocks see its table and items as a page's: at 8 words the table is cut into parts.
    tree = build_block_tree(Document.from_pages([(Page("x"), parse(converted.html))]), 8)
    blocks = {block.element.tag for block in tree.blocks}
    assert {"li", "h1", "p"} <= blocks and {"tr", "td", "th"} & blocks


def page_html(element: object) -> bytes:
    from htmlrag_chat.html.blocks import serialize

    return serialize(element).encode()


def test_markdown_without_front_matter_is_titled_by_its_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "plan.md"
    converted = convert(path, "markdown", b"Intro line.\n\n## The plan\n\n1. one\n2. two\n")
    assert converted.title == "The plan"
    assert tags(converted.html).count("li") == 2


def test_text_keeps_its_paragraphs_and_is_titled_by_its_name(tmp_path: Path) -> None:
    path = FIXTURES / "notes" / "boatshed.txt"
    converted = convert(path, "text", path.read_bytes())
    assert converted.title == "boatshed.txt"
    element = parse(converted.html)
    paragraphs = [visible_text(p) for p in element.iter("p")]
    assert paragraphs == [
        "Boat shed",
        "The spare key to the boat shed hangs behind the calendar in the kitchen. The oars"
        " are in the loft.",
        "Repaint the hull before Easter.",
    ]
    utf16 = convert(tmp_path / "w.txt", "text", "Ærø færge\n".encode("utf-16"))  # with its BOM
    assert utf16.text == "Ærø færge"


def test_html_is_cleaned_as_a_page_and_titled_in_order(tmp_path: Path) -> None:
    path = FIXTURES / "lighthouse.html"
    converted = convert(path, "html", path.read_bytes())
    assert converted.title == "Lighthouse keeper's diary"
    assert "38 litres of paraffin" in converted.text
    assert b"<script" not in converted.html and b"<style" not in converted.html
    # Cleaning the cached page again (each question does) changes nothing.
    _, again = clean_page(PageInput("x", converted.html, "utf-8"))
    assert page_html(again) == converted.html
    untitled = convert(tmp_path / "u.html", "html", b"<body><h2>Tide table</h2><p>Low at six.</p>")
    assert untitled.title == "Tide table"
    bare = convert(tmp_path / "bare.htm", "html", b"<p>Only a paragraph here.</p>")
    assert bare.title == "bare.htm"


@pytest.mark.parametrize(
    ("kind", "data", "reason"),
    [
        ("text", b"\x00\x01\x02binary\x00" * 50, "binary data, not text"),
        ("markdown", b"   \n\n", "no text in it"),
        ("html", b"<html><body><script>x()</script></body></html>", "no text in it"),
        ("html", b"\x00PK\x03\x04" * 100, "binary data, not HTML"),
    ],
)
def test_a_file_without_text_is_an_input_error_naming_it(
    tmp_path: Path, kind: str, data: bytes, reason: str
) -> None:
    path = tmp_path / "bad"
    with pytest.raises(InputError) as caught:
        convert(path, kind, data)
    assert str(caught.value) == f"{path}: {reason}"
