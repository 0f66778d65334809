"""A research's status line and its time left, from the reader's measured speed (a clock
the test moves, and the events a research emits)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from htmlrag_chat.base.events import (
    AnswerDelta,
    Event,
    PartEnded,
    PartsPlanned,
    PartStarted,
    ReaderBusy,
    StageFinished,
    StageStarted,
)
from htmlrag_chat.research.progress import ResearchStatus, duration


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def feed(status: ResearchStatus, clock: Clock, *steps: tuple[float, Event]) -> None:
    for seconds, event in steps:
        clock.now += seconds
        status.apply(event)


def a_part(number: int, total: int) -> list[tuple[float, Event]]:
    """A part: 10 s of search and pruning, 1,000 tokens read in 20 s, 50 written in 10 s."""
    return [
        (0, PartStarted(number, total, f"part {number}")),
        (10, StageStarted("read")),
        (0, ReaderBusy("prefill", 1000)),
        (20, ReaderBusy("generate")),
        *[(0.2, AnswerDelta("word ")) for _ in range(50)],
        (0, StageFinished("read", 30_000)),
        (0, PartEnded(number, total, "answered")),
    ]


def test_the_time_left_is_the_parts_to_come_at_the_measured_speed() -> None:
    clock = Clock()
    status = ResearchStatus(clock=clock)
    feed(status, clock, (0, PartsPlanned(("a", "b", "c"))), *a_part(1, 3))
    assert status.speed.read_rate == 50 and status.speed.write_rate == pytest.approx(5)
    # Part 2 begins: two parts of 40 s each to come (10 s outside the reader, 20 + 10 in it).
    feed(status, clock, (0, PartStarted(2, 3, "b")))
    assert status.seconds_left() == pytest.approx(80)
    clock.now += 30
    assert status.seconds_left() == pytest.approx(50)
    line = status.line(70.0)
    assert line.startswith("part 2/3 · ") and line.endswith(
        " · 1 answered · about 50 s left · 70.0 s"
    )


def test_no_estimate_before_the_reader_has_read_and_written() -> None:
    clock = Clock()
    status = ResearchStatus(clock=clock)
    feed(
        status,
        clock,
        (0, PartsPlanned(("a", "b"))),
        (0, StageStarted("split")),
        (0, ReaderBusy("prefill", 400)),
        (8, StageFinished("split", 8000)),  # a whole reply: its time counts as reading
        (0, PartStarted(1, 2, "a")),
    )
    assert status.speed.read_rate == 50 and status.speed.write_rate is None
    assert status.seconds_left() is None and "left" not in status.line(8.0)


def test_parts_from_the_cache_cost_nothing_in_the_estimate() -> None:
    clock = Clock()
    status = ResearchStatus(clock=clock)
    feed(status, clock, (0, PartsPlanned(("a", "b", "c"))), (0, PartStarted(1, 3, "a")))
    feed(status, clock, (0.1, PartEnded(1, 3, "answered", cached=True)), *a_part(2, 3))
    feed(status, clock, (0, PartStarted(3, 3, "c")))
    assert status.seconds_left() == pytest.approx(40)


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (2, 42, 89, 200, 3900)] == [
        "5 s", "40 s", "90 s", "3 min", "1 h 5 min",
    ]  # fmt: skip
