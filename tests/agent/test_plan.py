"""Reading the LLM's line-based replies: search queries from a rewrite, and what is missing
from a sufficiency check, as small models actually write them."""

from __future__ import annotations

import pytest

from htmlrag_chat.agent.plan import (
    MAX_QUERY_CHARS,
    Plan,
    check_settled,
    parse_missing,
    parse_plan,
    plan_settled,
)
from htmlrag_chat.base.prompts import load_prompt

CHECK_REQUEST = load_prompt("sufficiency").format(topic="")
REWRITE_REQUEST = load_prompt("rewrite").format(message="", max_queries="")


@pytest.mark.parametrize(
    "reply",
    [
        "SEARCH: lyon festival of lights",
        "search: lyon festival of lights",
        '1. **Search:** "lyon festival of lights"',
        "- search query: lyon festival of lights",
        "* **SEARCH QUERY:** `lyon festival of lights`",
        "> SEARCH: “lyon festival of lights”",
        "SEARCH\uff1a lyon festival of lights",  # full-width colon, as a CJK reply writes it
        "Sure, here is the query.\n\nSEARCH:   lyon   festival of lights  \n",
    ],
)
def test_a_search_line_is_read_through_its_decoration(reply: str) -> None:
    assert parse_plan(reply, 3) == Plan(("lyon festival of lights",))


def test_every_search_line_is_a_query_in_order() -> None:
    reply = "SEARCH: population of Lyon\n2. SEARCH: population of Porto\n"
    assert parse_plan(reply, 3) == Plan(("population of Lyon", "population of Porto"))


def test_repeated_queries_are_searched_once() -> None:
    reply = "SEARCH: population of Lyon\nSEARCH: Population of LYON\nSEARCH: population of Porto"
    assert parse_plan(reply, 3) == Plan(("population of Lyon", "population of Porto"))


def test_queries_are_capped_at_max_queries() -> None:
    reply = "\n".join(f"SEARCH: query {n}" for n in range(1, 6))
    assert parse_plan(reply, 2) == Plan(("query 1", "query 2"))


def test_duplicates_do_not_use_up_the_cap() -> None:
    reply = "SEARCH: a b\nSEARCH: a b\nSEARCH: c d"
    assert parse_plan(reply, 2) == Plan(("a b", "c d"))


@pytest.mark.parametrize("reply", ["NO SEARCH", "no search", "- **No search**", "NO_SEARCH."])
def test_no_search_means_the_message_needs_no_new_information(reply: str) -> None:
    plan = parse_plan(reply, 3)
    assert plan == Plan((), search=False)


def test_a_search_line_wins_over_no_search() -> None:
    assert parse_plan("NO SEARCH\nSEARCH: lyon", 3) == Plan(("lyon",))


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I would look up the population of Lyon.",
        "Searching for: lyon",  # not the marker
        "You could SEARCH: lyon",  # the marker is not at the start of a line
        'SEARCH: ""',
        '{"queries": ["lyon"]}',
    ],
)
def test_a_reply_without_a_usable_marker_is_none(reply: str) -> None:
    assert parse_plan(reply, 3) is None


def test_an_overlong_query_is_ignored() -> None:
    long = "lyon " * (MAX_QUERY_CHARS // 5 + 1)
    assert len(long.strip()) > MAX_QUERY_CHARS
    assert parse_plan(f"SEARCH: {long}", 3) is None
    assert parse_plan(f"SEARCH: {long}\nSEARCH: porto", 3) == Plan(("porto",))


def test_a_query_of_exactly_the_limit_is_kept() -> None:
    query = "x" * MAX_QUERY_CHARS
    assert parse_plan(f"SEARCH: {query}", 3) == Plan((query,))


@pytest.mark.parametrize("reply", ["ENOUGH", "enough", "**ENOUGH**", "- Sufficient.", "ENOUGH\n"])
def test_enough_means_nothing_is_missing(reply: str) -> None:
    assert parse_missing(reply) is None


@pytest.mark.parametrize(
    ("reply", "query"),
    [
        ("MISSING: population of Lyon", "population of Lyon"),
        ('**Missing:** "population of Lyon"', "population of Lyon"),
        ("- missing\uff1a population of Lyon", "population of Lyon"),
        ("The sources say nothing about that.\nMISSING: population of Lyon", "population of Lyon"),
    ],
)
def test_missing_names_the_query_for_what_is_missing(reply: str, query: str) -> None:
    assert parse_missing(reply) == query


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("ENOUGH\nMISSING: population of Lyon", None),  # the first marker is the answer
        ("Enough.\nMISSING: population of Lyon", None),
        ("MISSING: population of Lyon\nENOUGH", "population of Lyon"),
        ("Enough. MISSING: population of Lyon", None),  # MISSING is not at a line start
    ],
)
def test_the_first_marker_decides(reply: str, expected: str | None) -> None:
    assert parse_missing(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "I am not sure.",
        "MISSING:",
        "MISSING: ``",
        "MISSING: none",
        "Missing: Nothing.",
        "Yes, mostly.",
        "NOT ENOUGH",
    ],
)
def test_a_confused_check_is_taken_as_enough(reply: str) -> None:
    assert parse_missing(reply) is None


def test_an_overlong_missing_query_is_taken_as_enough() -> None:
    assert parse_missing("MISSING: " + "x" * (MAX_QUERY_CHARS + 1)) is None


@pytest.mark.parametrize(
    "reply",
    [
        "MISSING: <a web search query for the information that is missing>",
        "MISSING: <query>",
        "MISSING: a short web search query for the information that is missing",
        "MISSING: web search query",
        "<think>The sources say nothing of the population.</think>\nENOUGH",
        "<think>I should write MISSING: lyon population but",  # unterminated: all thought
        "",
    ],
)
def test_an_echoed_placeholder_a_thought_or_nothing_never_becomes_a_search(reply: str) -> None:
    """SmolLM2 answered the old prompt's placeholder, and the agent searched for it."""
    assert parse_missing(reply, CHECK_REQUEST) is None


def test_a_real_missing_query_after_a_thought_is_kept() -> None:
    reply = "<think>the census is not in the sources</think>\nMISSING: Lyon census 2020 population"
    assert parse_missing(reply, CHECK_REQUEST) == "Lyon census 2020 population"


@pytest.mark.parametrize(
    "reply", ["SEARCH: <search query>", "SEARCH: web searches", "<think>SEARCH: lyon</think>"]
)
def test_a_rewrite_that_echoes_its_instruction_is_no_plan(reply: str) -> None:
    assert parse_plan(reply, 3, REWRITE_REQUEST) is None
    assert parse_plan("SEARCH: Lyon new message", 3, REWRITE_REQUEST) == Plan(("Lyon new message",))


# -- replies cut off once they are settled (issue 48)


def prefixes(reply: str) -> list[str]:
    """``reply`` as it streams, a character at a time."""
    return [reply[:end] for end in range(1, len(reply) + 1)]


@pytest.mark.parametrize(
    ("reply", "settled_at"),
    [
        ("ENOUGH. The sources name the framework.", "ENOUGH"),
        ("**Enough**", "**Enough"),
        (
            "MISSING: release year of iOS 13\nThe sources lack it.",
            "MISSING: release year of iOS 13\n",
        ),
        ("<think>MISSING: x\n</think>ENOUGH", "<think>MISSING: x\n</think>ENOUGH"),
    ],
)
def test_a_check_is_settled_at_its_first_word_or_its_missing_line(
    reply: str, settled_at: str
) -> None:
    first = next(text for text in prefixes(reply) if check_settled(text))
    assert first == settled_at
    # What is read from the reply cut there is what the whole reply says.
    assert parse_missing(first, CHECK_REQUEST) == parse_missing(reply, CHECK_REQUEST)


@pytest.mark.parametrize("reply", ["The sources say a lot about it", "MISSING: release ye"])
def test_a_check_that_has_not_said_it_yet_is_read_on(reply: str) -> None:
    assert not any(check_settled(text) for text in prefixes(reply))


def test_a_plan_is_settled_once_it_has_its_queries_or_says_no_search() -> None:
    settled = plan_settled(2)
    reply = "SEARCH: population of Lyon\nSEARCH: population of Porto\nSEARCH: rivers\n"
    first = next(text for text in prefixes(reply) if settled(text))
    assert first == "SEARCH: population of Lyon\nSEARCH: population of Porto\n"
    assert parse_plan(first, 2) == parse_plan(reply, 2)
    assert next(t for t in prefixes("NO SEARCH\nSEARCH: x") if settled(t)) == "NO SEARCH"
    # The same query twice is one; a last line may still grow.
    assert not settled("SEARCH: lyon\nSEARCH: Lyon\nSEARCH: porto")
