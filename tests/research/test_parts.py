"""Taking a question apart: the reader's ``PART:`` lines read as small models write them,
and the parts a user gives checked."""

from __future__ import annotations

import asyncio

import pytest

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import Event, Notice, ReaderBusy
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.research.parts import MAX_PARTS, given_parts, parse_parts, split_question
from tests.openai_server import ScriptedLLM, serve_llm

REQUEST = load_prompt("parts").format(question="", max_parts="")


@pytest.mark.parametrize(
    ("reply", "parts"),
    [
        ("PART: Who built it?\nPART: When did it open?", ("Who built it?", "When did it open?")),
        # Bullets, numbering, bold, a numbered marker, quotes and the full-width colon.
        (
            'Sure! Here they are:\n1. **PART 1:** "Who built it?"\n- Part 2\uff1aWhen did it open?',
            ("Who built it?", "When did it open?"),
        ),
        ("PART: Who built it?\nPART: who built it?", ("Who built it?",)),  # once each
        # An echo of the request, or a placeholder, is no part.
        ("PART: <a question>\nPART: a complete question\nPART: Why?", ("Why?",)),
        ("<think>PART: reasoning</think>PART: When did it open?", ("When did it open?",)),
        ("I cannot split this question.", ()),
        # A part with another part's details dropped goes (Qwen's split of rm-05).
        (
            "PART: Who was the first Somali American mayor of a U.S. city?\n"
            "PART: Who founded The Reckoning Crew?\n"
            "PART: Who was the first Somali American mayor of a U.S. city, selected by the "
            "South Portland council in 2021?",
            (
                "Who founded The Reckoning Crew?",
                "Who was the first Somali American mayor of a U.S. city, selected by the "
                "South Portland council in 2021?",
            ),
        ),
        # So does the whole question restated beside its parts.
        (
            "PART: Who built the tower and when did it open?\nPART: Who built the tower?\n"
            "PART: When did the tower open?",
            ("Who built the tower?", "When did the tower open?"),
        ),
    ],
)
def test_parts_are_read_from_lines_as_small_models_write_them(
    reply: str, parts: tuple[str, ...]
) -> None:
    assert parse_parts(reply, MAX_PARTS, REQUEST) == parts


def test_at_most_max_parts_are_kept() -> None:
    reply = "\n".join(f"PART: Question number {n}?" for n in range(1, 9))
    assert len(parse_parts(reply, 3, REQUEST)) == 3
    assert MAX_PARTS == 5


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        (["Who?", " "], "a --part is empty"),
        ([f"Question {n}?" for n in range(6)], "6 parts given: a research asks at most 5"),
        (["x" * 301], "a --part is over 300 characters"),
    ],
)
def test_parts_given_that_cannot_be_used_are_one_line_each(parts: list[str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        given_parts(parts)


def test_parts_given_are_kept_in_order_on_one_line_each_once() -> None:
    assert given_parts(["Who  built\nit?", "When?", "Who built it?"]) == ("Who built it?", "When?")


def split(reply: str, question: str = "Who built it and when did it open?") -> tuple[
    tuple[str, ...], list[Event], ScriptedLLM
]:  # fmt: skip
    llm = ScriptedLLM(reply=lambda messages: reply)
    events: list[Event] = []

    async def main() -> tuple[str, ...]:
        async with serve_llm(llm) as url:
            return await split_question(OpenAIChat(url, "m"), question, 4, events.append)

    return asyncio.run(main()), events, llm


def test_the_reader_is_asked_with_the_question_and_the_bound() -> None:
    parts, events, llm = split("PART: Who built it?\nPART: When did it open?")
    assert parts == ("Who built it?", "When did it open?")
    [request] = llm.requests
    asked = request["messages"][-1]["content"]
    assert "Who built it and when did it open?" in asked and "at most 4 parts" in asked
    assert request["messages"][0]["role"] == "system"
    assert any(isinstance(event, ReaderBusy) for event in events)


def test_one_part_back_is_the_question_as_typed() -> None:
    parts, events, _ = split("PART: Who constructed it and when was it opened?")
    assert parts == ("Who built it and when did it open?",)
    assert not [event for event in events if isinstance(event, Notice)]


def test_no_llm_means_one_part_with_a_note() -> None:
    events: list[Event] = []
    parts = asyncio.run(split_question(None, "Q?", 5, events.append))
    assert parts == ("Q?",)
    assert [e.message for e in events if isinstance(e, Notice)] == [
        "the extractive reader cannot split a question: give its parts with --part"
    ]
