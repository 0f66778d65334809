"""The progress line: the agent's events folded into what a person watching wants to know.

Kept free of widgets so that what the line says is tested without a screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from htmlrag_chat.events import (
    AnswerDelta,
    Event,
    Progress,
    ReaderBusy,
    Searching,
    StageFinished,
    StageStarted,
)

_STAGE_LABELS = {
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
}


@dataclass
class PipelineStatus:
    """Stage, pages fetched and failed, documents read the first time, tokens before and
    after each pruning stage."""

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
        elif isinstance(event, ReaderBusy):
            tokens = f" {event.tokens:,} tokens" if event.tokens is not None else ""
            self.reader = "generating" if event.phase == "generate" else f"prefilling{tokens}"

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
            failed = f", {self.failed} failed" if self.failed else ""
            parts.append(f"pages {self.fetched}/{self.pages}{failed}")
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
        return _STAGE_LABELS.get(self.stage, self.stage or "starting")
