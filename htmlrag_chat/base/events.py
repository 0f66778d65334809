"""Typed progress events, emitted by every stage and shown by the CLI and the TUI.

Stages report through an ``EventSink`` callback rather than printing, so the same pipeline
feeds a stderr progress line, a ``--stats`` JSON record, or a widget.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from htmlrag_chat.base.sources import Source


@dataclass(frozen=True)
class StageStarted:
    stage: str
    items: int | None = None  # how many things the stage will work on, when known


@dataclass(frozen=True)
class StageFinished:
    stage: str
    ms: float
    counts: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Progress:
    """Items done so far in a running stage (pages fetched, say), ``failed`` among them."""

    stage: str
    done: int
    total: int
    failed: int = 0


@dataclass(frozen=True)
class Notice:
    """Something the user should know that is not an error (e.g. an approximate tokenizer).

    A model that is not here (``role``: reader, pruner, embedding, tokenizer) also says in a
    few words what is used ``instead``: such notes come every run until the model is
    installed, so ``ask`` shows them as one short block, once per cache file, while
    ``message`` keeps the detail (``-v``, the chat app)."""

    message: str
    role: str = ""
    instead: str = ""


@dataclass(frozen=True)
class Searching:
    """A search round begins: ``why`` says where the queries came from (the message as
    typed, a rewrite of a follow-up, sub-queries, or what the sources were missing)."""

    round: int
    queries: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Skipped:
    """A query or page left out, and why (e.g. a query missing from a replayed recording)."""

    what: str
    reason: str
    kind: str = "page"  # "query" or "page"

    @property
    def why(self) -> str:
        """``reason`` as a line that already names ``what`` says it: a replay's "query not
        in the recording: 'X'" is "not in the recording", not the question twice."""
        named = f": {self.what!r}"
        if self.reason.endswith(named):
            return self.reason[: -len(named)].removeprefix(f"{self.kind} ")
        return self.reason


@dataclass(frozen=True)
class AnswerDelta:
    """The next piece of the streamed answer, citations already checked against the
    sources (an invented source number never reaches the screen). ``quoted``: text quoted
    from a source, to be shown verbatim (in Markdown, escaped), never read for citations."""

    text: str
    quoted: bool = False


@dataclass(frozen=True)
class AnswerRetracted:
    """The answer streamed so far was the model's reasoning (its template had opened a think
    block, which the model has just closed): a face that can take it back does; the answer
    starts again with the next ``AnswerDelta``."""


@dataclass(frozen=True)
class SourcesReady:
    """Pruning is done: the numbered sources the reader will read, shown while it reads
    (on a CPU its prefill takes as long as everything before it)."""

    sources: tuple[Source, ...]


@dataclass(frozen=True)
class ReaderBusy:
    """What the reader LLM is doing: ``prefill`` (reading ``tokens`` prompt tokens that no
    cache holds; None when unknown) or ``generate`` (writing)."""

    phase: str
    tokens: int | None = None


# How a research's parts were made: given by the user, listed as such in the question, or
# split by the reader (``PartsPlanned.how``, ``research.report.Report.how``).
GIVEN, WRITTEN, BY_READER = "given", "written", "reader"


@dataclass(frozen=True)
class PartsPlanned:
    """A research (``research/``) is taken apart: the ``parts`` it asks one by one, and
    ``how`` they were made (``GIVEN``, ``WRITTEN`` or ``BY_READER``)."""

    parts: tuple[str, ...]
    how: str = BY_READER


@dataclass(frozen=True)
class PartStarted:
    """Research part ``number`` of ``total`` begins: its own search, pruning and answer."""

    number: int
    total: int
    part: str


@dataclass(frozen=True)
class PartEnded:
    """Research part ``number`` of ``total`` is done: ``state`` is one of
    ``research.report.STATES`` (answered, nothing found, stopped, failed); ``cached``: its
    answer came from an earlier run; ``detail`` says what it found, in a few words."""

    number: int
    total: int
    state: str
    cached: bool = False
    detail: str = ""


Event = (
    StageStarted
    | StageFinished
    | Progress
    | Notice
    | Searching
    | Skipped
    | AnswerDelta
    | AnswerRetracted
    | SourcesReady
    | ReaderBusy
    | PartsPlanned
    | PartStarted
    | PartEnded
)
EventSink = Callable[[Event], None]


def ignore(event: Event) -> None:
    """An event sink for callers that do not show progress."""


@contextmanager
def stage(emit: EventSink, name: str, items: int | None = None) -> Iterator[dict[str, int]]:
    """Time a stage and emit its start and finish; the caller fills in the yielded counts."""
    counts: dict[str, int] = {}
    emit(StageStarted(name, items))
    start = time.perf_counter()
    yield counts
    emit(StageFinished(name, (time.perf_counter() - start) * 1000, counts))
