"""What ``ask`` shows while it works: one form per run, chosen from the options and stderr.

- ``live`` (stderr is a terminal): one status line (stage, counts, elapsed;
  ``progress.PipelineStatus``, the chat app's line) redrawn in place and cleared before the
  answer streams, so the screen ends up holding the answer and its sources, not a log.
- ``trace`` (``-v``, or ``--progress`` when stderr is not a terminal): the timestamped log of
  every stage, with every note in full (``common.progress_printer``; the words of every
  form are ``base/progress.py``'s).
- ``plain`` (stderr is not a terminal): notes, skipped queries and a research's parts only.
- ``quiet`` (``-q``): nothing on stderr but the error, if any.

The notes that say a model is not here (``Notice.role``: reader, pruner, embedding,
tokenizer) come every run until the model is installed, so ``live`` and ``plain`` group them
into one block, worded one way, shown just before the answer (a question that fails says
only why), each model once per cache file: that it was said is kept in the file's
``derived`` table (a read-only replay keeps it in the side file of derived artefacts, under
the file's path). ``htmlrag-chat
models`` holds the detail; ``-v`` prints it every time.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import (
    AnswerDelta,
    AnswerRetracted,
    Event,
    Notice,
    PartEnded,
    PartsPlanned,
    ReaderBusy,
    Skipped,
    SourcesReady,
    StageStarted,
    stage,
)
from htmlrag_chat.base.progress import PipelineStatus, Status, event_line, sources_lines
from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.commands.common import PROG, history_store, open_store, progress_printer

if TYPE_CHECKING:
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.store.db import Store

FORMS = ("live", "trace", "plain", "quiet")
TICK = 0.25  # seconds between redraws of the elapsed time while no event comes
NOTES_KIND = "shown-note"  # the derived-artefact kind that remembers a block was shown
FALLBACK_HEADER = "note: models not here, and what is used instead (said once per cache file):"
FALLBACK_FOOTER = "how to get each: htmlrag-chat models"


def choose_form(*, quiet: bool, verbose: bool, progress: bool, terminal: bool) -> str:
    """The form ``ask`` shows its progress in (see the module's docstring)."""
    if quiet:
        return "quiet"
    if verbose or (progress and not terminal):
        return "trace"
    return "live" if terminal else "plain"


def fallback_block(notices: list[Notice]) -> str:
    """One block for the notes of missing models: a line per role, what is used instead."""
    width = max(len(notice.role) for notice in notices)
    lines = [f"{PROG}: {FALLBACK_HEADER}"]
    lines += [f"  {notice.role.ljust(width)}  {notice.instead}" for notice in notices]
    lines.append(f"  {FALLBACK_FOOTER}")
    return "\n".join(lines)


@contextmanager
def conversation_store(
    args: argparse.Namespace, output: AskOutput, what: str
) -> Iterator[tuple[Store, ChatSession]]:
    """The cache file the options name and a conversation kept in it (or where
    ``history_store`` keeps it), for ``ask`` and ``research``: opened as the first stage the
    status line shows, and ``what`` (this exchange is not kept) noted with why, when the
    conversation cannot be kept."""
    with stage(output, "open"):
        from htmlrag_chat.conversations.session import ChatSession

        store = open_store(args)
    with store, history_store(args, store) as (history, not_kept):
        output.seen = lambda text: first_showing(store, text)
        if not_kept:
            output(Notice(f"{what}: {not_kept}"))
        yield store, ChatSession(history)


def first_showing(store: Store, text: str) -> bool:
    """Whether ``text`` is shown for the first time with this cache file, remembering that
    it now has been: in the file itself, or, for a replay that only reads it, in the side
    file of derived artefacts under a key of this file's path (so another recording, or
    the next ``make demo``'s fresh one, hears it again). A memo that cannot be read or
    written says yes (a note twice is no harm)."""
    from htmlrag_chat.store.db import Store
    from htmlrag_chat.store.embeddings import derived_cache_path

    try:
        if store.get_derived(NOTES_KIND, _key(text)) is not None:  # said in record mode
            return False
        if not store.readonly:
            store.put_derived(NOTES_KIND, _key(text), b"")
            return True
        with Store.open(derived_cache_path()) as side:
            key = _key(f"{store.path.resolve()}\n{text}")
            if side.get_derived(NOTES_KIND, key) is not None:
                return False
            side.put_derived(NOTES_KIND, key, b"")
            return True
    except UserError:
        return True


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class StatusLine:
    """One line on a terminal, redrawn in place with a carriage return (and spaces over what
    a longer line left): by each event, and every ``TICK`` seconds by a thread so that the
    elapsed time moves while a stage works. It never wraps (a wrapped line could not be
    redrawn in place): it is cut to the terminal's width."""

    def __init__(
        self,
        stream: TextIO,
        clock: Callable[[], float] = time.perf_counter,
        status: Status | None = None,
    ) -> None:
        self.stream = stream
        self.clock = clock
        self.start = clock()
        self.status: Status = status or PipelineStatus()
        self._lock = threading.Lock()
        self._drawn = False
        self._last = ""
        self._stopped = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="status-line", daemon=True)
        self._ticker.start()

    def apply(self, event: Event) -> None:
        self.status.apply(event)
        self.draw()

    def draw(self) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            line = terminal_safe(self.status.line(self.clock() - self.start))[: self._width()]
            if self._drawn and line == self._last:
                return
            self.stream.write("\r" + line.ljust(len(self._last) if self._drawn else 0))
            self.stream.flush()
            self._drawn, self._last = True, line

    def print_above(self, text: str) -> None:
        """A note: printed where the status line was, the line drawn again under it."""
        with self._lock:
            self._erase()
            self.stream.write(text + "\n")
        self.draw()

    def stop(self) -> None:
        """Clear the line for good (before the answer streams, or at the end)."""
        with self._lock:
            self._stopped.set()
            self._erase()
            self.stream.flush()

    def _erase(self) -> None:
        """Blank the drawn line and return to its start (spaces over it: no escape sequence,
        so ``NO_COLOR`` and terminals without ANSI support see plain text)."""
        if self._drawn:
            self.stream.write("\r" + " " * len(self._last) + "\r")
            self._drawn = False

    def _tick(self) -> None:
        while not self._stopped.wait(TICK):
            self.draw()

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        return columns - 1 if columns > 10 else 79  # 0: a terminal that gives no size


class AskOutput:
    """The event sink of one ``ask``: progress on stderr in its form, the answer on stdout
    (as it streams, or whole at the end with ``stream=False``; not at all with ``--json``).
    Use it as a context manager so that a failure never leaves the status line drawn under
    the error message."""

    def __init__(
        self, form: str, *, stream: bool = True, answer: bool = True, status: Status | None = None
    ) -> None:
        self.form = form
        self.stream = stream
        self.answer = answer
        self.seen: Callable[[str], bool] = lambda text: True  # first_showing, once a store is open
        self._text: list[str] = []
        self._fallbacks: list[Notice] = []
        self._sources: SourcesReady | None = None  # shown once an LLM starts to prefill
        self._line = StatusLine(sys.stderr, status=status) if form == "live" else None
        self._log = progress_printer(form == "trace") if form in ("trace", "plain") else None

    def __enter__(self) -> AskOutput:
        return self

    def __exit__(self, failure: type[BaseException] | None, *exc_info: object) -> None:
        if failure is None:  # a failure's one line is all that is worth reading then
            self._flush_fallbacks()
        if self._line is not None:
            self._line.stop()

    def __call__(self, event: Event) -> None:
        if isinstance(event, AnswerDelta):
            self._answer(event.text)
        elif isinstance(event, AnswerRetracted):
            self._text.clear()  # held back: never printed (streamed: the note says so)
        elif isinstance(event, Notice) and event.role and self.form != "trace":
            self._fallbacks.append(event)
        elif self.form == "quiet":
            return
        elif self._line is not None:
            self._live(event)
        elif self._log is not None:
            self._log(event)
        if isinstance(event, StageStarted) and event.stage == "read":
            self._flush_fallbacks()  # right above the answer; a question that fails says only why

    def finish(self, shown: str | None = None) -> None:
        """The answer is complete: say the missing models if no answer was read (a research
        whose parts all came from the cache), clear the status line, print the answer if
        held back (as ``shown``, the answer with the check's corrections, when given)."""
        self._flush_fallbacks()
        if self._line is not None:
            self._line.stop()
        if self._text:
            sys.stdout.write(shown if shown is not None else "".join(self._text))
            sys.stdout.flush()
            self._text.clear()

    @property
    def streamed(self) -> bool:
        """Whether the answer went to stdout as it was written (then a corrected one is
        printed again under it)."""
        return self.answer and self.stream

    def _answer(self, text: str) -> None:
        if self.answer and not self.stream:
            self._text.append(text)
        if self._line is not None:
            if self.answer and self.stream:
                # The answer takes over from here, wherever stdout goes: a pipe into
                # `less` or `tee` ends on this terminal too, where a line redrawn with
                # carriage returns would run into the answer's text.
                self._line.stop()
            else:  # the answer is held back (--no-stream, --json): count it on the line
                self._line.apply(AnswerDelta(text))
        if self.answer and self.stream:
            sys.stdout.write(text)
            sys.stdout.flush()

    def _live(self, event: Event) -> None:
        assert self._line is not None
        if isinstance(event, PartsPlanned | PartEnded):  # a research's parts, as they go
            self._line.status.apply(event)
            self._line.print_above(f"{PROG}: {event_line(event)}")
        elif isinstance(event, Notice) or (isinstance(event, Skipped) and event.kind == "query"):
            self._line.print_above(f"{PROG}: {event_line(event)}")
        elif isinstance(event, Skipped):
            if event.kind == "query":
                what, why = terminal_safe(event.what), terminal_safe(event.why)
                self._line.print_above(f"{PROG}: skipped query {what}: {why}")
            self._line.draw()
        elif isinstance(event, SourcesReady):
            self._sources = event  # an extractive answer comes at once: no list before it
        else:
            prefill = isinstance(event, ReaderBusy) and event.phase == "prefill"
            if prefill and self._sources is not None:
                # An LLM reads: the sources are there to read while it prefills.
                self._line.print_above(sources_lines(self._sources.sources))
                self._sources = None
            self._line.apply(event)

    def _flush_fallbacks(self) -> None:
        notices, self._fallbacks = self._fallbacks, []
        if self.form == "quiet":
            return
        # Each missing model is said once per cache file: a later run that misses another
        # (a follow-up with the default pruner) says only that one.
        notices = [n for n in notices if self.seen(f"{n.role}: {n.instead}")]
        if not notices:
            return
        block = fallback_block(notices)
        if self._line is not None:
            self._line.print_above(block)
        else:
            print(block, file=sys.stderr)
