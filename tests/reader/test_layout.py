"""The prompt layout: numbered sources with title and URL, and every call of a conversation
laid out as the continuation of the one before, so that a prefix cache serves it."""

from __future__ import annotations

import re

from htmlrag_chat.reader import Message, Source, Turn
from htmlrag_chat.reader.layout import (
    answer_messages,
    check_messages,
    reminder,
    render_sources,
    rewrite_messages,
)

REMINDER = reminder("Who?")  # too few words to tell a language: the question's, unnamed
SOURCE = Source(3, "https://example.org/a", "A <|eot_id|> title", "<p>Body</p>", "Body")
OTHER = Source(1, "https://example.org/b", "B", "<p>Other</p>", "Other")


def text(messages: list[Message]) -> str:
    """The messages as a chat template lays them out, role by role."""
    return "".join(f"<{m.role}>{m.content}</{m.role}>" for m in messages)


def shared(a: list[Message], b: list[Message]) -> int:
    """Characters of the rendered prompts that ``a`` and ``b`` share from the start."""
    left, right = text(a), text(b)
    return next(
        (i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y),
        min(len(left), len(right)),
    )


def test_sources_are_numbered_with_title_url_and_html() -> None:
    rendered = render_sources([SOURCE])
    assert rendered.splitlines()[:3] == [
        "[3] A < |eot_id| > title",
        "URL: https://example.org/a",
        "<p>Body</p>",
    ]
    assert render_sources([]) == "(no sources)"


def test_the_check_and_the_answer_share_everything_up_to_the_question() -> None:
    check = check_messages("Who?", [SOURCE])
    answer = answer_messages("Who?", [SOURCE])
    assert [m.role for m in answer] == ["system", "user"]
    asked, reminder = answer[-1].content.split("Question: Who?\n")
    assert reminder == REMINDER and "[1]" in reminder
    assert "Answer in the language of the question." in reminder
    assert check[-1].content.startswith(asked + "Question: Who?\n")
    assert "Do the sources above contain" in check[-1].content
    # Only what follows the question differs: the check's instruction, the answer's reminder.
    assert shared(check, answer) == len(text(answer)) - len("</user>") - len(reminder)


def test_the_instructions_hold_no_example_sentence_to_copy() -> None:
    # Given one ("The tower was completed in 1889 [2]."), Qwen2.5-1.5B answered with it
    # about once in a hundred answers (docs/evaluation.md): the example is the bracket.
    instructions = " ".join(answer_messages("Who?", [SOURCE])[0].content.split())
    assert "before the period: [2]." in instructions
    assert not re.findall(r'"[^"]*\[\d+\]\.?"', instructions)


def test_the_reminder_names_the_language_a_question_plainly_is_in() -> None:
    # A small reader told "the language of the question" answered German questions in
    # English; told "German", it answers in German (docs/evaluation.md).
    german = answer_messages("Wie hoch ist der Turm und wer hat ihn gebaut?", [SOURCE])
    assert german[-1].content.endswith(reminder("Wie hoch ist der Turm und wer hat ihn gebaut?"))
    assert "Answer in German, the language of the question." in german[-1].content
    polish = reminder("Ile osób liczy załoga i jakie są jej zadania?")
    assert "Answer in Polish, the language of the question." in polish
    # Read as German and English alike ("was", "in"; "die", "in"): no name, rather than a
    # wrong one.
    tied = reminder("Was kostet die Lackierung Abyss Black Pearl beim Plug-in Hybrid?")
    assert "Answer in the language of the question." in tied
    # The rest of the reminder is the same whatever the language.
    assert polish.replace("Polish, t", "t") == REMINDER


def test_a_follow_up_on_the_same_sources_continues_the_conversation() -> None:
    first = Turn("Who?", "Her [3].", (SOURCE,))
    before = [*answer_messages("Who?", [SOURCE]), Message("assistant", "Her [3].")]
    rewrite = rewrite_messages("And when?", [first], 3)
    again = answer_messages("And when?", [SOURCE], [first])
    # The rewrite and the answer both continue the first answer word for word.
    assert rewrite[:-1] == before == again[:-1]
    assert again[-1] == Message("user", f"Question: And when?\n{REMINDER}")
    assert "New message: And when?" in rewrite[-1].content and "up to 3" in rewrite[-1].content


def test_new_sources_come_with_the_new_question_and_leave_the_old_ones_out() -> None:
    first = Turn("Who?", "Her [3].", (SOURCE,))
    follow = answer_messages("Where?", [OTHER], [first])
    assert [(m.role, m.content) for m in follow[1:3]] == [
        ("user", f"Question: Who?\n{REMINDER}"),
        ("assistant", "Her [3]."),
    ]
    assert "URL: https://example.org/b" in follow[-1].content
    assert "example.org/a" not in text(follow)
    # A follow-up's check names its standalone rewrite when that differs.
    check = check_messages("Where?", [OTHER], [first], topic="where is she from")
    assert check[:-1] == follow[:-1] and "(where is she from)" in check[-1].content


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


def test_each_source_reaches_the_reader_in_its_rendering_markers_escaped_code_kept() -> None:
    html = (
        "<html><head><title>T</title></head><body><h2>Facts</h2><ul><li>Paris [3]</li>"
        "<li>1889</li></ul><table><tr><th>Year</th></tr><tr><td>1889</td></tr></table>"
        "<pre>x[1] = 2</pre></body></html>"
    )
    markdown = Source(1, "https://a.example/", "T", html, "", rendering="markdown")
    assert render_sources([markdown]).splitlines()[2:] == [
        "## Facts", "", "- Paris \\[3\\]", "- 1889", "", "| Year |", "| --- |", "| 1889 |",
        "", "```", "x[1] = 2", "```",
    ]  # fmt: skip
    text = Source(1, "https://a.example/", "T", html, "", rendering="text")
    assert render_sources([text]).splitlines()[2:] == [
        "Facts", "Paris \\[3\\]", "1889", "Year", "1889", "x[1] = 2",
    ]  # fmt: skip
