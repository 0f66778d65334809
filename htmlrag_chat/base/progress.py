"""The agent's events in words, for people: written once, for every face.

``ask`` prints them (one status line redrawn in a terminal, a timestamped trace with
``-v``), the MCP server sends them as progress notifications, and the chat app folds them
into its progress line and its notes. What the events carry from the web or a model
(queries, URLs, titles, reasons, notices) passes ``text_safe`` here, so no face can show a
page's escape sequence or control token by forgetting to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from htmlrag_chat.base.events import (
    BY_READER,
    GIVEN,
    WRITTEN,
    AnswerDelta,
    AnswerRetracted,
    Event,
    Notice,
    PartEnded,
    PartsPlanned,
    PartStarted,
    Progress,
    ReaderBusy,
    Searching,
    Skipped,
    SourcesReady,
    StageFinished,
    StageStarted,
)
from htmlrag_chat.base.safety import one_line, terminal_safe, text_safe
from htmlrag_chat.base.sources import Source

STAGE_LABELS = {
    "open": "opening the cache",
    "load": "loading models",
    "plan": "planning searches",
    "documents": "reading your documents",
    "search": "searching",
    "fetch": "fetching pages",
    "clean": "cleaning pages",
    "check": "checking the sources",
    "read": "answering",
    "cite": "checking citations",
    "judge": "judging uncertain citations",
}


def event_line(event: Event) -> str | None:
    """What an event says, in one line (the sources: a line each under a heading); None
    for a piece of the answer, which is the answer, not progress."""
    if isinstance(event, Notice):
        return f"note: {text_safe(event.message)}"
    if isinstance(event, Skipped):
        return f"skipped {event.kind} {text_safe(event.what)}: {text_safe(event.why)}"
    if isinstance(event, Searching):
        queries = " | ".join(text_safe(query) for query in event.queries)
        return f"round {event.round} ({text_safe(event.why)}): {queries}"
    if isinstance(event, StageStarted):
        return event.stage + (f" ({event.items})" if event.items is not None else "") + " ..."
    if isinstance(event, Progress):
        failed = f", {event.failed} failed" if event.failed else ""
        return f"{event.stage} {event.done}/{event.total}{failed}"
    if isinstance(event, SourcesReady):
        return sources_lines(event.sources)
    if isinstance(event, ReaderBusy):
        return f"reader: {reader_doing(event)}"
    if isinstance(event, PartsPlanned | PartStarted | PartEnded):
        return part_line(event)
    if isinstance(event, StageFinished):
        counts = ", ".join(f"{key} {value}" for key, value in event.counts.items())
        return f"{event.stage} done in {event.ms:.0f} ms" + (f": {counts}" if counts else "")
    return None


PARTS_MADE = {  # how a research's parts were made, in words (progress and exports)
    GIVEN: "as given",
    WRITTEN: "as the question lists them",
    BY_READER: "as the reader split the question",
}


def part_line(event: PartsPlanned | PartStarted | PartEnded) -> str:
    """A research's parts (``research in 2 parts:`` and a line each), a part begun
    (``part 1/2: Who founded Shabka?``) or ended (``part 1/2 answered: 2 sentences...``)."""
    if isinstance(event, PartsPlanned):
        how = PARTS_MADE[event.how]
        count = f"{len(event.parts)} part{'s' if len(event.parts) != 1 else ''}"
        lines = [f"research in {count}, {how}:"]
        lines += [f"  {n}. {one_line(part)}" for n, part in enumerate(event.parts, 1)]
        return "\n".join(lines)
    if isinstance(event, PartStarted):
        return f"part {event.number}/{event.total}: {one_line(event.part)}"
    cached = " (from the cache)" if event.cached else ""
    detail = f": {text_safe(event.detail)}" if event.detail else ""
    return f"part {event.number}/{event.total} {event.state}{cached}{detail}"


def reader_doing(event: ReaderBusy) -> str:
    """``prefilling 3,512 tokens`` or ``generating``."""
    if event.phase == "generate":
        return "generating"
    return "prefilling" + (f" {event.tokens:,} tokens" if event.tokens is not None else "")


def sources_lines(sources: Sequence[Source]) -> str:
    """The numbered sources as soon as pruning ends, to read while the reader prefills."""
    lines = [f"sources ({len(sources)}), while the reader reads:"]
    for source in sources:
        date = f" ({source.date})" if source.date else ""
        title = one_line(source.title) or "Untitled"
        lines.append(f"  [{source.number}] {title} - {terminal_safe(source.where)}{date}")
    return "\n".join(lines)


class Status(Protocol):
    """A status line's state: a question's ``PipelineStatus``, or a research's
    (``research/progress.py``), fed every event and asked for its line."""

    def apply(self, event: Event) -> None: ...

    def line(self, elapsed: float) -> str: ...


@dataclass
class PipelineStatus:
    """The one status line: stage, pages fetched and failed, documents read the first time,
    tokens before and after each pruning stage, what the reader is doing. Kept free of
    widgets and terminals, so that ``ask``'s live line and the chat app's say the same,
    tested without a screen."""

    stage: str = ""
    round: int = 0
    fetched: int = 0
    failed: int = 0
    pages: int = 0  # pages to fetch in this round
    files: tuple[int, int, int] = (0, 0, 0)  # documents read, to read, failed (while reading)
    tokens: dict[str, tuple[int, int]] = field(default_factory=dict)  # scorer -> before, after
    answer_chars: int = 0
    reader: str = ""  # what the reader LLM is doing: "prefilling 3,512 tokens", "generating"

    def apply(self, event: Event) -> None:
        if isinstance(event, Searching):
            self.round = event.round
        elif isinstance(event, StageStarted):
            self.stage = event.stage
            self.reader = ""
            if event.stage == "fetch":
                self.fetched = self.failed = 0
                self.pages = event.items or 0
        elif isinstance(event, Progress) and event.stage == "fetch":
            self.fetched, self.failed, self.pages = event.done, event.failed, event.total
        elif isinstance(event, Progress) and event.stage == "documents":
            self.files = (event.done, event.total, event.failed)
        elif isinstance(event, StageFinished) and event.stage == "documents":
            self.files = (0, 0, 0)
        elif isinstance(event, StageFinished) and event.stage.endswith("/prune"):
            scorer = event.stage.split("/")[0]
            self.tokens[scorer] = (
                event.counts.get("tokens_before", 0),
                event.counts.get("tokens_after", 0),
            )
        elif isinstance(event, AnswerDelta):
            self.answer_chars += len(event.text)
        elif isinstance(event, AnswerRetracted):
            self.answer_chars = 0
        elif isinstance(event, ReaderBusy):
            self.reader = reader_doing(event)

    def line(self, elapsed: float) -> str:
        """One line: ``answering · round 1 · pages 9/10, 1 failed · embed 30,512→8,190 tok
        · 4.2 s``."""
        parts = [self.stage_label()]
        if self.reader and self.stage in ("plan", "check", "read"):
            parts.append(self.reader)
        if self.round:
            parts.append(f"round {self.round}")
        done, total, failed = self.files
        if total:
            parts.append(f"files {done:,}/{total:,}" + (f", {failed} failed" if failed else ""))
        if self.pages:
            failures = f", {self.failed} failed" if self.failed else ""
            parts.append(f"pages {self.fetched}/{self.pages}{failures}")
        for scorer, (before, after) in self.tokens.items():
            parts.append(f"{scorer} {before:,}→{after:,} tok")
        if self.answer_chars:
            parts.append(f"{self.answer_chars:,} chars")
        parts.append(f"{elapsed:.1f} s")
        return " · ".join(parts)

    def stage_label(self) -> str:
        if "/" in self.stage:
            scorer, step = self.stage.split("/", 1)
            return f"pruning ({scorer} {step})"
        return STAGE_LABELS.get(self.stage, self.stage or "starting")
