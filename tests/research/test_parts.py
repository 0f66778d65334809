"""Taking a question apart: the reader's ``PART:`` lines read as small models write them,
and the parts a user gives checked."""

from __future__ import annotations

import asyncio

import pytest

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import Event, Notice, ReaderBusy
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.research.parts import (
    MAX_PARTS,
    given_parts,
    parse_parts,
    split_question,
    written_parts,
)
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


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        # Qualifiers stay with their question (rm-05: the reader dropped the group's).
        (
            "Who was the first Somali American mayor of a U.S. city, selected by the South "
            "Portland, Maine council in 2021, and who founded The Reckoning Crew, the South "
            "Carolina group that backed Joe Biden in 2020?",
            (
                "Who was the first Somali American mayor of a U.S. city, selected by the South "
                "Portland, Maine council in 2021?",
                "Who founded The Reckoning Crew, the South Carolina group that backed Joe Biden "
                "in 2020?",
            ),
        ),
        # A series, question words after a preposition or an adverb, a pronoun after a name.
        (
            "In what year was Shabka founded, what share of the speakers were women, and "
            "roughly how much did Tom Francis pay for his High Elf's armour?",
            (
                "In what year was Shabka founded?",
                "What share of the speakers were women?",
                "Roughly how much did Tom Francis pay for his High Elf's armour?",
            ),
        ),
        # "When" with a gerund opens a circumstance, not a question.
        (
            "When planting a hydrangea in a pot, how much space should be left at the top, "
            "and what size of pots does the lemon guide list?",
            (
                "When planting a hydrangea in a pot, how much space should be left at the top?",
                "What size of pots does the lemon guide list?",
            ),
        ),
        (
            "Wie viel Mehl braucht man für den Zitronenkuchen, und mit wie vielen Punkten "
            "gewann Marius Lindvik in Willingen?",
            (
                "Wie viel Mehl braucht man für den Zitronenkuchen?",
                "Mit wie vielen Punkten gewann Marius Lindvik in Willingen?",
            ),
        ),
        # Questions one after another, or joined by ";", each its own part (or list).
        (
            "What year was the Eiffel Tower completed? Who designed the Sydney Opera House?",
            ("What year was the Eiffel Tower completed?", "Who designed the Sydney Opera House?"),
        ),
        (
            "Who designed the Sydney Opera House; and when was the Eiffel Tower completed?",
            ("Who designed the Sydney Opera House?", "When was the Eiffel Tower completed?"),
        ),
        (
            "How tall is the Eiffel Tower? How tall is the Shard, and who designed the Burj "
            "Khalifa?",
            (
                "How tall is the Eiffel Tower?",
                "How tall is the Shard?",
                "Who designed the Burj Khalifa?",
            ),
        ),
        # A Spanish question keeps its opening mark in each part.
        (
            "¿Quién diseñó la Ópera de Sídney, y cuándo se terminó la Torre Eiffel?",
            ("¿Quién diseñó la Ópera de Sídney?", "¿Cuándo se terminó la Torre Eiffel?"),
        ),
        (
            "¿Quién diseñó la Ópera de Sídney, y cuándo se terminó la Torre Eiffel? ¿Dónde "
            "está el Museo del Prado?",
            (
                "¿Quién diseñó la Ópera de Sídney?",
                "¿Cuándo se terminó la Torre Eiffel?",
                "¿Dónde está el Museo del Prado?",
            ),
        ),
        # Not plainly a list: the reader splits these.
        ("What year was the Eiffel Tower completed? Who designed it?", ()),  # points back
        ("What is the tallest tower of Paris? Why?", ()),  # a fragment
        ("I am going to Paris. How tall is the Eiffel Tower and when did the Louvre open?", ()),
        ("What is the capital of France?", ()),
        ("Who founded the company, which was based in Ohio, in 1990?", ()),  # no conjunction
        ("Who won the 2019 race and when did she retire from racing?", ()),  # points back
        ("How tall is the Eiffel Tower, and how old?", ()),  # a fragment
        ("For the logbook: who caught the swarm, and how much paraffin does the lamp burn?", ()),
        (
            "Who gave the model of leadership as a continuum, ranging between autocratic and "
            "free-rein styles, and in t-SNE, the Student t-distribution with one degree of "
            "freedom is the same as which distribution?",
            (),
        ),
    ],
)
def test_a_question_written_as_a_list_is_split_where_its_writer_split_it(
    question: str, parts: tuple[str, ...]
) -> None:
    assert written_parts(question) == parts


def test_a_written_list_longer_than_the_bound_goes_to_the_reader() -> None:
    question = "Who built the tower, who paid for the tower, and when did the tower open?"
    assert len(written_parts(question, 3)) == 3
    assert written_parts(question, 2) == ()
    assert len(written_parts("Who built the tower, and when did the tower open?", 2)) == 2


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
