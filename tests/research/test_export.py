"""A report exported as Markdown: no raw HTML, no link but to web pages, the evidence of
each part's sentences under it."""

from __future__ import annotations

from markdown_it import MarkdownIt

from htmlrag_chat.research.export import report_markdown
from tests.research.test_page import hostile_report


def test_the_markdown_report_holds_no_raw_html_and_no_link_but_to_pages() -> None:
    markdown = report_markdown(hostile_report())
    for token in MarkdownIt("commonmark").parse(markdown):
        assert token.type != "html_block"
        for child in token.children or []:
            assert child.type != "html_inline"
            assert not str(child.attrs.get("href", "")).startswith("javascript")
    assert "\x1b" not in markdown and "\u202e" not in markdown
    assert markdown.startswith("# When did the tower open?")
    assert "**Short answer.**" in markdown and "## 1. When did it open?" in markdown
    assert "**Evidence**" in markdown and "## References" in markdown
    assert "My notes: file\\:///home/me/notes.md" in markdown  # a file: its path as text
