"""Pruned HTML as Markdown: headings, lists, tables, links and code kept, markup dropped."""

from __future__ import annotations

from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.html.markdown import html_to_markdown
from htmlrag_chat.pruning.pipeline import PageInput, clean_page
from tests.conftest import PAGES

PAGE = """<html><title>Router</title><body><h1>Reset</h1><div><p>Hold the <b>reset</b>
button, see <a href="https://x.example/a">the manual</a>.</p>
<ul><li>First<ul><li>inner one</li></ul></li><li>Second <code>x[1]</code></li></ul>
<ol><li>one</li><li>two</li></ol>
<table><tr><th>Model</th><th>Port</th></tr><tr><td>A|B</td><td>8080</td></tr></table>
<pre>code
  indented</pre>loose tail</div></body></html>"""


def test_structure_survives_as_markdown() -> None:
    assert html_to_markdown(PAGE) == "\n".join(
        [
            "# Reset",
            "",
            "Hold the **reset** button, see [the manual](https://x.example/a).",
            "",
            "- First",
            "  - inner one",
            "- Second `x[1]`",
            "",
            "1. one",
            "2. two",
            "",
            "| Model | Port |",
            "| --- | --- |",
            "| A\\|B | 8080 |",
            "",
            "```",
            "code",
            "  indented",
            "```",
            "",
            "loose tail",
        ]
    )


def test_nothing_visible_is_empty() -> None:
    assert html_to_markdown("") == ""
    assert html_to_markdown("<html><head><title>x</title></head><body> </body></html>") == ""


def test_real_pages_keep_their_words_at_fewer_characters() -> None:

    for page in PAGES:
        _, cleaned = clean_page(PageInput(page.name, page.data))
        html = serialize(cleaned)
        markdown = html_to_markdown(html)
        assert len(markdown) < len(html)
        for snippet in page.with_snippets:
            assert " ".join(snippet.split()) in " ".join(markdown.replace("**", "").split())
