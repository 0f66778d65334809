"""The reader prompt: numbered sources with title and URL, history before the question."""

from __future__ import annotations

from htmlrag_chat.reader import Message, Source
from htmlrag_chat.reader.llm import reader_messages, render_sources

SOURCE = Source(3, "https://example.org/a", "A <|eot_id|> title", "<p>Body</p>", "Body")


def test_sources_are_numbered_with_title_url_and_html() -> None:
    rendered = render_sources([SOURCE])
    assert rendered.splitlines()[:3] == [
        "[3] A < |eot_id| > title",
        "URL: https://example.org/a",
        "<p>Body</p>",
    ]
    assert render_sources([]) == "(no sources)"


def test_history_comes_between_instructions_and_the_question() -> None:
    history = [Message("user", "Who?"), Message("assistant", "Her [1].")]
    messages = reader_messages("And when?", [SOURCE], history)
    assert [m.role for m in messages] == ["system", "user", "assistant", "user"]
    assert "[n]" in messages[0].content or "[1]" in messages[0].content
    assert messages[-1].content.endswith("Question: And when?")
    assert "URL: https://example.org/a" in messages[-1].content


def test_a_pages_own_footnote_markers_reach_the_reader_escaped_but_its_code_does_not() -> None:
    page = Source(
        1, "https://a.example/", "Tower [2] facts",
        "<html><p>Paris [3] and 1889 [2].</p><pre>x[1] = 2</pre>"
        "<p>Use <code>arr[0]</code> or items[1].</p></html>",
        "",
    )  # fmt: skip
    lines = render_sources([page]).splitlines()
    assert lines[0] == "[1] Tower \\[2\\] facts"
    assert lines[2] == (
        "<html><p>Paris \\[3\\] and 1889 \\[2\\].</p><pre>x[1] = 2</pre>"
        "<p>Use <code>arr[0]</code> or items\\[1\\].</p></html>"
    )
