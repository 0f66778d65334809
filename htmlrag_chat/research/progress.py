"""A research's progress on one line: which part, what it is doing, how long is left.

The same line in a terminal (``research``'s status line) and in the chat app; the part
lines above it (planned, each one ended) are ``base/progress.py``'s words. The time left is
estimated from the reader's measured speed, since on a CPU the reader is the wait: tokens a
second it reads (each prefill, from ``ReaderBusy("prefill", n)`` to its first token, or to
the end of a whole-reply call such as the split or a check) and tokens a second it writes
(one ``AnswerDelta`` a token, as readers stream them). A part to come costs what the parts
so far spent outside the reader, plus its prompt read and its answer written at those
speeds; the prompt and the answer are the mean of the parts so far (the running one's
prompt before any ended). Parts answered from an earlier run cost nothing and are not
counted. No estimate is shown before the reader has read and written once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from htmlrag_chat.base.events import (
    AnswerDelta,
    Event,
    PartEnded,
    PartsPlanned,
    PartStarted,
    ReaderBusy,
    StageFinished,
)
from htmlrag_chat.base.progress import PipelineStatus
from htmlrag_chat.research.report import ANSWERED

# Calls whose reply is read whole: their time counts as reading (a short reply is in it).
_WHOLE_CALLS = ("split", "plan", "check", "judge")
DEFAULT_ANSWER_TOKENS = 120  # an answer's length until one has been written


@dataclass
class ReaderSpeed:
    """The reader's measured speed: tokens read and written a second."""

    read_tokens: float = 0.0
    read_seconds: float = 0.0
    written: int = 0
    write_seconds: float = 0.0
    _prefill: tuple[float, int] | None = None  # since when, how many tokens
    _writing: float | None = None  # since when

    def apply(self, event: Event, now: float) -> None:
        if isinstance(event, ReaderBusy) and event.phase == "prefill":
            self._close_writing(now)
            self._prefill = (now, event.tokens) if event.tokens else None
        elif isinstance(event, ReaderBusy) and event.phase == "generate":
            self._close_reading(now)
            self._writing = now
        elif isinstance(event, AnswerDelta) and self._writing is not None:
            self.written += 1
        elif isinstance(event, StageFinished) and event.stage == "read":
            self._close_writing(now)
        elif isinstance(event, StageFinished) and event.stage in _WHOLE_CALLS:
            self._close_reading(now)

    @property
    def read_rate(self) -> float | None:
        return self.read_tokens / self.read_seconds if self.read_seconds > 0 else None

    @property
    def write_rate(self) -> float | None:
        return self.written / self.write_seconds if self.write_seconds > 0 else None

    def seconds(self, prompt: float, answer: float) -> float | None:
        """How long reading ``prompt`` tokens and writing ``answer`` take at this speed."""
        read, write = self.read_rate, self.write_rate
        if read is None or write is None:
            return None
        return prompt / read + answer / write

    def _close_reading(self, now: float) -> None:
        if self._prefill is not None:
            since, tokens = self._prefill
            self.read_tokens += tokens
            self.read_seconds += now - since
            self._prefill = None

    def _close_writing(self, now: float) -> None:
        if self._writing is not None:
            self.write_seconds += now - self._writing
            self._writing = None


@dataclass
class _Part:
    started: float
    prompt: int = 0  # tokens of its answer's prompt, the largest it read
    written: int = 0


@dataclass
class ResearchStatus:
    """The status line of a research: ``PipelineStatus``'s for the running part, with the
    part's number, the parts done and the time left before the elapsed time."""

    clock: Callable[[], float] = time.perf_counter
    parts: tuple[str, ...] = ()
    states: dict[int, str] = field(default_factory=dict)
    current: int = 0
    pipeline: PipelineStatus = field(default_factory=PipelineStatus)
    speed: ReaderSpeed = field(default_factory=ReaderSpeed)
    _running: _Part | None = None
    _done: list[tuple[float, _Part]] = field(default_factory=list)  # parts asked this run

    def apply(self, event: Event) -> None:
        now = self.clock()
        self.speed.apply(event, now)
        if isinstance(event, PartsPlanned):
            self.parts = event.parts
        elif isinstance(event, PartStarted):
            self.current = event.number
            self.pipeline = PipelineStatus()
            self._running = _Part(now)
        elif isinstance(event, PartEnded):
            self.states[event.number] = event.state
            if self._running is not None and not event.cached:
                self._done.append((now - self._running.started, self._running))
            self._running = None
        else:
            if self._running is not None:
                if isinstance(event, ReaderBusy) and event.tokens:
                    self._running.prompt = max(self._running.prompt, event.tokens)
                elif isinstance(event, AnswerDelta):
                    self._running.written += 1
            self.pipeline.apply(event)

    def seconds_left(self) -> float | None:
        """The time the parts not done yet will take, or None before it can be said."""
        total = len(self.parts)
        if not total or not self.current:
            return None
        waiting = total - self.current  # after the running one
        prompt, answer, other = self._means()
        per_part = self.speed.seconds(prompt, answer)
        if per_part is None:
            return None
        per_part += other
        left = waiting * per_part
        if self._running is not None:
            left += max(per_part - (self.clock() - self._running.started), 0.0)
        return left

    def line(self, elapsed: float) -> str:
        """``part 2/3 · answering · generating · 412 chars · 1 answered · about 2 min left
        · 81.0 s``."""
        pipeline = self.pipeline.line(elapsed)
        if not self.parts:
            return pipeline
        head, _, tail = pipeline.rpartition(" · ")
        pieces = [f"part {self.current or 1}/{len(self.parts)}"]
        pieces += [head] if head else []
        done = sum(1 for state in self.states.values() if state == ANSWERED)
        if done:
            pieces.append(f"{done} answered")
        left = self.seconds_left()
        if left is not None:
            pieces.append(f"about {duration(left)} left")
        return " · ".join([*pieces, tail])

    def _means(self) -> tuple[float, float, float]:
        """A part's prompt and answer in tokens, and its seconds outside the reader: the
        means of the parts asked so far, else the running part's prompt so far."""
        if self._done:
            count = len(self._done)
            prompt = sum(part.prompt for _, part in self._done) / count
            answer = sum(part.written for _, part in self._done) / count
            reader = [
                self.speed.seconds(part.prompt, part.written) or 0.0 for _, part in self._done
            ]
            other = sum(
                max(took - spent, 0.0) for (took, _), spent in zip(self._done, reader, strict=True)
            )
            return prompt, answer or DEFAULT_ANSWER_TOKENS, other / count
        running = self._running
        prompt = running.prompt if running is not None else 0
        return prompt, DEFAULT_ANSWER_TOKENS, 0.0


def duration(seconds: float) -> str:
    """``40 s``, ``3 min``, ``1 h 5 min``: how long, as a person says it."""
    if seconds < 90:
        return f"{max(round(seconds / 5) * 5, 5):.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"
