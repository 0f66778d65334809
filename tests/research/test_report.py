"""A report from its parts: the short answer is the parts' own backed sentences, a part
with nothing says so in one line, and the record has every sentence with its evidence."""

from __future__ import annotations

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.research.report import (
    ANSWERED,
    FAILED,
    NOTHING,
    STOPPED,
    PartResult,
    Report,
    cite,
)

A, B = "https://a.example/tower", "https://b.example/bridge"


def part_answer(url: str, text: str, claims: list[Claim]) -> Answer:
    sources = [Source(1, "https://other.example/", "Other", "<p>x</p>", "x"),
               Source(2, url, "Page", "<p>page</p>", "page")]  # fmt: skip
    return Answer("q", text, "openai", "m", claims, 0, [], Research(sources, ["q"], rounds=1))


TOWER = part_answer(
    A,
    "Sure. The tower opened in 1889 [2]. It is 330 m tall [1].",
    [
        Claim("Sure.", (), checked=False),
        Claim("The tower opened in 1889.", (2,), (Quote(2, "opened in 1889", 0.9, True),)),
        Claim("It is 330 m tall.", (1,), (Quote(1, "x", 0.1, False),), 0.1, False, ("330",)),
    ],
)
BRIDGE = part_answer(
    B,
    "The bridge was finished in 1886 [2]†.",
    [
        Claim(
            "The bridge was finished in 1886.",
            (1,),
            (Quote(1, "x", 0.1, False), Quote(2, "finished in 1886", 0.9, True, added=True)),
            0.9,
            True,
            corrected=(2,),
        )
    ],
)


def report(*results: PartResult) -> Report:
    return Report.of("When did the tower and the bridge open?", "openai", "m", results)


def test_the_short_answer_is_each_part_s_first_backed_sentence_as_written() -> None:
    made = report(
        PartResult(1, "When did the tower open?", ANSWERED, TOWER),
        PartResult(2, "When was the bridge finished?", ANSWERED, BRIDGE),
    )
    # Tower: [2] is page A, the first reference (cited first); [1] "other" is the second.
    assert made.sections[0].text == "Sure. The tower opened in 1889 [1]. It is 330 m tall [2]."
    assert made.sections[1].text == "The bridge was finished in 1886 [3]†."
    assert made.short_answer() == [
        "The tower opened in 1889 [1].",
        "The bridge was finished in 1886 [3]†.",
    ]
    assert [s.url for s in made.references][:3:2] == [A, B]
    body = made.body()
    assert body.startswith("The tower opened in 1889 [1]. The bridge was finished in 1886 [3]†.")
    assert "## 1. When did the tower open?" in body and "## 2. When was the bridge" in body


def test_parts_without_an_answer_say_why_in_one_line() -> None:
    made = report(
        PartResult(1, "When did the tower open?", ANSWERED, TOWER),
        PartResult(2, "Who painted it?", NOTHING, reason="no page held anything for it"),
        PartResult(3, "How tall?", FAILED, reason="the search failed: offline"),
        PartResult(4, "Why?", STOPPED),
    )
    assert made.short_answer()[1:] == [
        "Part 2: nothing found: no page held anything for it.",
        "Part 3: not answered: the search failed: offline.",
        "Part 4: stopped before it was answered.",
    ]
    assert made.stopped is False  # Report.of is told; the runner says so
    record = made.to_json()
    assert [part["state"] for part in record["parts"]] == [ANSWERED, NOTHING, FAILED, STOPPED]
    assert [part["sentences"] for part in record["parts"][1:]] == [[], [], []]


def test_the_record_has_each_sentence_with_its_quotes_and_the_references() -> None:
    made = report(
        PartResult(1, "When did the tower open?", ANSWERED, TOWER),
        PartResult(2, "When was the bridge finished?", ANSWERED, BRIDGE),
    )
    record = made.to_json()
    tower, bridge = record["parts"]
    opened = tower["sentences"][1]
    assert opened["cited"] == [1] and opened["citations"][0]["url"] == A
    assert opened["citations"][0]["quote"] == "opened in 1889"
    assert bridge["sentences"][0]["corrected"] == [3]
    assert bridge["corrections"] and tower["flags"]  # the 330 m sentence is flagged
    assert (record["sentences"], record["backed"]) == (3, 2)
    assert [(r["number"], r["cited"], r["parts"]) for r in record["references"]] == [
        (1, True, [1]),
        (2, True, [1, 2]),
        (3, True, [2]),
    ]


def test_a_report_is_kept_as_one_answer() -> None:
    made = report(
        PartResult(1, "When did the tower open?", ANSWERED, TOWER),
        PartResult(2, "When was the bridge finished?", ANSWERED, BRIDGE),
    )
    kept = made.as_answer()
    assert kept.question == made.question
    assert kept.sources == made.references and len(kept.claims) == 4
    assert "### 2. When was the bridge finished?" in kept.markdown
    assert kept.cited_numbers == {1, 2, 3} and len(kept.flags) == 1


def test_a_citation_goes_before_the_end_mark() -> None:
    assert cite("It opened in 1889.", [2]) == "It opened in 1889 [2]."
    assert cite("Vraiment ?", [1, 3], corrected=True) == "Vraiment [1, 3]†?"
    assert cite("No end", [1]) == "No end [1]"
