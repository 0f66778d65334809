"""Conversations kept in the store: created by a first question, reopened with their turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.conversations.session import TITLE_CHARS, ChatSession, title_for
from htmlrag_chat.reader import Source
from htmlrag_chat.store.db import Store

SOURCE = Source(
    1, "https://a.test/", "A", "<html><body><p>ARKit grabs depth.</p></body></html>", ""
)


def answer(question: str, text: str) -> Answer:
    return Answer(
        question, text, "extractive", "bm25", [], 0, [], Research([SOURCE], [question], rounds=1)
    )


def test_a_conversation_is_kept_and_reopened_with_its_answered_turns(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        session = ChatSession(store)
        first = session.question_asked("Which framework?")
        session.answered(first, answer("Which framework?", "ARKit [1]."))
        session.question_asked("Stopped one")  # never answered
        conversation = session.conversation
        assert conversation is not None and session.title == "Which framework?"

        reopened = ChatSession(store)
        messages = reopened.open(conversation)
        assert [m["content"] for m in messages] == ["Which framework?", "Stopped one"]
        assert reopened.title == "Which framework?"
        (turn,) = reopened.turns
        assert (turn.question, turn.answer) == ("Which framework?", "ARKit [1].")
        assert turn.sources[0].url == SOURCE.url and turn.sources[0].text == "ARKit grabs depth."


def test_rename_delete_and_export(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        session = ChatSession(store)
        with pytest.raises(LookupError):
            session.export(tmp_path)
        message = session.question_asked("Which framework?")
        session.answered(message, answer("Which framework?", "ARKit [1]."))
        assert session.conversation is not None
        session.rename(session.conversation, "Depth maps")
        assert session.title == "Depth maps"
        path = session.export(tmp_path)
        assert path.read_text(encoding="utf-8").startswith("# Depth maps\n")
        session.delete(session.conversation)
        assert session.conversation is None and session.turns == []
        assert store.conversations() == []


def test_long_questions_are_cut_at_a_word_for_the_title() -> None:
    question = "word " * 40
    title = title_for(question)
    assert title.endswith("…") and len(title) <= TITLE_CHARS + 1
    assert not title[:-1].endswith(" ") and title[:-1].split() == ["word"] * len(title[:-1].split())
    assert title_for("  short   one ") == "short one"
