"""The conversation tables of the store: questions, their answers, and the order, search
and deletion the history commands and the chat app rely on."""

from __future__ import annotations

import sqlite3

import pytest

from htmlrag_chat.store.db import StoreError
from tests.store.conftest import sql


def test_conversations_messages_and_answers(store):
    first = store.new_conversation("first")
    second = store.new_conversation()
    question = store.add_message(first, "user", "Which license?")
    answer = store.add_answer(
        question,
        reader="llama",
        text="Apache 2.0 [1].",
        sources=[{"number": 1, "url": "https://docker.com/"}],
        citations=[{"n": 1, "valid": True}],
        flags=["checked"],
    )
    store.add_answer(question, reader="other", text="retry", sources=[], citations=[], flags=[])
    reply = store.add_message(first, "assistant", "Apache 2.0 [1].")

    assert [c["id"] for c in store.conversations()] == [first, second]  # active one first
    assert store.conversations()[0]["title"] == "first"
    messages = store.messages(first)
    assert [(m["id"], m["role"], m["content"]) for m in messages] == [
        (question, "user", "Which license?"),
        (reply, "assistant", "Apache 2.0 [1]."),
    ]
    assert [a["reader"] for a in messages[0]["answers"]] == ["llama", "other"]
    assert messages[0]["answers"][0] | {"created_at": 0} == {
        "id": answer,
        "reader": "llama",
        "text": "Apache 2.0 [1].",
        "sources": [{"number": 1, "url": "https://docker.com/"}],
        "citations": [{"n": 1, "valid": True}],
        "flags": ["checked"],
        "created_at": 0,
    }
    assert messages[1]["answers"] == []
    assert store.messages(second) == [] and store.messages(999) == []

    store.rename_conversation(second, "renamed")
    assert {c["id"]: c["title"] for c in store.conversations()}[second] == "renamed"


def test_the_most_recently_active_conversation_comes_first(store):
    older, newer = store.new_conversation("older"), store.new_conversation("newer")
    store.add_message(older, "user", "x")
    assert [c["id"] for c in store.conversations()] == [older, newer]
    message = store.add_message(newer, "user", "y")
    assert [c["id"] for c in store.conversations()] == [newer, older]
    store.add_message(older, "user", "z")
    store.add_answer(message, reader="r", text="t", sources=[], citations=[], flags=[])
    assert [c["id"] for c in store.conversations()] == [newer, older]


def test_deleting_a_conversation_deletes_its_messages_and_answers(store, path):
    keep = store.new_conversation("keep")
    store.add_message(keep, "user", "stay")
    gone = store.new_conversation("gone")
    message = store.add_message(gone, "user", "bye")
    store.add_answer(message, reader="r", text="t", sources=[], citations=[], flags=[])
    store.delete_conversation(gone)
    assert [c["id"] for c in store.conversations()] == [keep]
    assert sql(path, "SELECT count(*) FROM messages") == [(1,)]
    assert sql(path, "SELECT count(*) FROM answers") == [(0,)]


def test_conversation_summaries_count_questions_and_name_the_latest_reader(store):
    quiet = store.new_conversation("nothing asked")
    asked = store.new_conversation("Straße und Brücke")
    first = store.add_message(asked, "user", "Which license?")
    store.add_answer(first, reader="local:m", text="Apache", sources=[], citations=[], flags=[])
    store.add_message(asked, "assistant", "Apache")
    second = store.add_message(asked, "user", "Since when?")
    store.add_answer(second, reader="openai:q", text="2013 ÉTÉ", sources=[], citations=[], flags=[])
    summaries = store.conversation_summaries()
    assert [(c["id"], c["turns"], c["reader"]) for c in summaries] == [
        (asked, 2, "openai:q"),
        (quiet, 0, None),
    ]
    assert summaries[0]["title"] == "Straße und Brücke" and summaries[0]["updated_at"] > 0
    assert [c["id"] for c in store.conversation_summaries(limit=1)] == [asked]
    # Unicode case folding, in titles, questions and answers alike
    for text in ("STRASSE", "since WHEN", "été", "LICENSE"):
        assert [c["id"] for c in store.conversation_summaries(search=text)] == [asked], text
    assert store.conversation_summaries(search="nowhere") == []
    assert store.conversation_summaries(search="100%") == []  # no LIKE wildcards
    assert store.conversation(quiet) == summaries[1] and store.conversation(999) is None


def test_unknown_conversation_or_message_is_a_store_error(store):
    with pytest.raises(StoreError, match="no conversation 7"):
        store.add_message(7, "user", "x")
    with pytest.raises(StoreError, match="no message 7"):
        store.add_answer(7, reader="r", text="t", sources=[], citations=[], flags=[])
    with pytest.raises(StoreError, match="no conversation 7"):
        store.rename_conversation(7, "x")
    with pytest.raises(StoreError, match="no conversation 7"):
        store.delete_conversation(7)
    assert store.stats()["messages"] == store.stats()["answers"] == 0


def test_save_question_opens_a_conversation_or_adds_to_one(store):
    conversation, first = store.save_question(None, "Which license?", title="Licences")
    same, second = store.save_question(conversation, "Since when?")
    assert same == conversation and second > first
    assert [(c["id"], c["title"]) for c in store.conversations()] == [(conversation, "Licences")]
    assert [m["content"] for m in store.messages(conversation)] == ["Which license?", "Since when?"]
    with pytest.raises(StoreError, match="no conversation 99"):
        store.save_question(99, "x")


def test_a_question_that_cannot_be_saved_leaves_no_empty_conversation(store, path):
    """The new conversation and its first question are one transaction."""
    sql(
        path, "CREATE TRIGGER refuse BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'no'); END"
    )
    with pytest.raises(sqlite3.IntegrityError):
        store.save_question(None, "Which license?", title="Licences")
    assert store.conversations() == []
    sql(path, "DROP TRIGGER refuse")
    conversation, _ = store.save_question(None, "Which license?", title="Licences")
    assert [c["id"] for c in store.conversations()] == [conversation]


@pytest.mark.parametrize("number", [10**22, -(10**22), 2**63])
def test_an_id_past_sqlites_integers_is_no_conversation(store, number):
    store.new_conversation("kept")
    assert store.conversation(number) is None
    assert store.messages(number) == []
    with pytest.raises(StoreError, match=f"no conversation {number}"):
        store.rename_conversation(number, "x")
    with pytest.raises(StoreError, match=f"no conversation {number}"):
        store.delete_conversation(number)
    assert [c["title"] for c in store.conversations()] == ["kept"]
