"""What the commands share: one-line errors, progress on stderr, argument types, the store."""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from htmlrag_chat.base.errors import EXIT_USAGE, InputError, UserError
from htmlrag_chat.base.events import (
    Event,
    EventSink,
    Notice,
    PartEnded,
    PartsPlanned,
    ReaderBusy,
    Skipped,
    SourcesReady,
)
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.base.progress import event_line, sources_lines
from htmlrag_chat.base.safety import json_safe, terminal_safe, text_safe
from htmlrag_chat.commands.typed import explain
from htmlrag_chat.html.decode import normalize_charset
from htmlrag_chat.html.limits import read_page_file
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.settings.layered import DEFAULT, Origin

if TYPE_CHECKING:  # sqlite-utils loads only for the commands that use the cache
    from htmlrag_chat.store.db import Store

PROG = "htmlrag-chat"
COMMAND_PARSER = "command_parser"  # the parser of the command read last, for its errors
REPLAY, REPLAY_DB = "--replay", "--replay-db"

EPILOG = """settings:
  every option of a setting can also be set in the config file, as `name = value` under
  its [section] (htmlrag-chat config init writes one with all of them; config set KEY VALUE
  changes one), or as HTMLRAG_CHAT_<NAME>; htmlrag-chat config shows each value in effect
  and where it comes from.

exit codes:
  0  success (an input with no visible text gives an empty result and a notice)
  1  internal error (set HTMLRAG_CHAT_DEBUG=1 for a traceback)
  2  usage error (a bad option, an argument that is not UTF-8 text, a device or config
     file that cannot be used, an output that cannot be written or is one of the inputs),
     a model that cannot be loaded, or a query missing from a replay (for ask: none of its
     searches in the recording)
  3  an input could not be used (missing, binary, over the 5 MiB page cap, unknown
     encoding, not in the recording, a malformed recording to import); the other inputs
     were still processed (fetch: no URL came back ok)
  4  the cache file cannot be used (corrupted, not SQLite, from a newer version)
  5  the web could not be searched (offline, rate limited, timed out, a dead proxy, an
     answer that is not a search API's), or the reader's server could not be reached or
     answered with an error
  6  fetch: some URLs came back ok (downloaded or cached), others did not
"""

# The largest whole number SQLite stores: an id, a limit or a count above it cannot mean
# anything here, and would stop at the database with an OverflowError.
MAX_INT = 2**63 - 1
_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def add_command(
    commands: argparse._SubParsersAction,
    name: str,
    summary: str,
    handler: object,
    parents: list[argparse.ArgumentParser] | None = None,
    examples: Sequence[tuple[str, str]] = (),
) -> argparse.ArgumentParser:
    """A command whose help ends with its ``examples`` (command line, what it does); the
    exit codes are in the top-level help only."""
    command = commands.add_parser(
        name,
        help=summary,
        description=summary[:1].upper() + summary[1:] + ".",
        epilog=examples_text(examples),
        formatter_class=HelpFormatter,
        parents=parents or [],
    )
    command.set_defaults(handler=handler, **{COMMAND_PARSER: command})
    return command


def examples_text(examples: Sequence[tuple[str, str]]) -> str | None:
    if not examples:
        return None
    lines = ["examples:"]
    for line, what in examples:
        lines += [f"  {line}", f"      {what}"]
    return "\n".join(lines)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help, the examples kept as written, and an option's value named once
    after all its spellings (``--pruner, --scorer {two-stage,...}``), not after each."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings or action.nargs == 0:
            return super()._format_action_invocation(action)
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return f"{', '.join(action.option_strings)} {value}"


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that also reads ``--replay=DB`` (as ``--replay-db DB``).

    ``--replay`` is a plain flag, so it can never take the next word (a question, a command
    name) as its file; the file, when it is not the ``--cache`` one, goes after ``=`` or
    ``--replay-db``. Words after ``--`` are left alone. Its errors are one line, like every
    other error of the command line (argparse prints the whole usage first, which buries
    the message), with the closest name when a word was misspelt (``typed.explain``), and
    point to the help of the command being read.
    """

    def error(self, message: str) -> NoReturn:
        self.usage_error(explain(message, self))

    def usage_error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: {message} (see {self.prog} --help)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """As argparse's, but words nobody took are refused by the command that was read
        last (``ask --qiuet`` points to ``ask --help``, with ``--quiet`` suggested)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = getattr(parsed, COMMAND_PARSER, None) or self
            message = f"unrecognized arguments: {' '.join(extras)}"
            command.usage_error(explain(message, command, extras))
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        end = words.index("--") if "--" in words else len(words)
        spelled: list[str] = []
        for word in words[:end]:
            if word.startswith(f"{REPLAY}="):
                spelled += [REPLAY_DB, word.partition("=")[2]]
            else:
                spelled.append(word)
        return super().parse_known_args(spelled + words[end:], namespace)


def replay_hint(words: Sequence[str]) -> str | None:
    """Advice for ``--replay FILE`` (a flag followed by a file, which argparse then takes
    for a command or a question): the two spellings that name the file."""
    for flag, word in itertools.pairwise(words):
        if (
            flag == REPLAY
            and not word.startswith("-")
            and (word.endswith((".sqlite3", ".sqlite", ".db")) or Path(word).is_file())
        ):
            return f"{REPLAY} takes no file: {REPLAY}={word} or {REPLAY_DB} {word}"
    return None


def store_options(default: object = None, refresh: bool = False) -> argparse.ArgumentParser:
    """--cache, --replay, --replay-db and (for the commands that search or fetch: ``refresh``)
    --refresh, accepted before or after the command name (the copy after it uses SUPPRESS so
    that it never overwrites a value given before it)."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("cache")
    group.add_argument(
        "--cache", type=user_path, default=default, metavar="FILE",
        help="the cache file (default $HTMLRAG_CHAT_CACHE, else the user cache directory)",
    )  # fmt: skip
    group.add_argument(
        REPLAY, action="store_true", default=False if default is None else default,
        help="replay the cache file: read it only, no network at all; missing queries and "
        "URLs are reported by name",
    )  # fmt: skip
    group.add_argument(
        REPLAY_DB, type=replay_file, default=default, metavar="DB",
        help=f"replay DB instead of the cache file (also {REPLAY}=DB)",
    )  # fmt: skip
    if refresh:
        group.add_argument(
            "--refresh", type=age_seconds, default=default, metavar="AGE",
            help="redo searches and downloads cached longer ago than AGE (90s, 30m, 6h, 2d)",
        )  # fmt: skip
    return parser


def replaying(args: argparse.Namespace) -> bool:
    """Whether the options ask for a replay (of the cache file, or of --replay-db's)."""
    return bool(getattr(args, "replay", False) or getattr(args, "replay_db", None))


def cache_origin(args: argparse.Namespace) -> tuple[Path, Origin]:
    """The cache file the options name, and why: ``--replay-db``, ``--cache``,
    ``$HTMLRAG_CHAT_CACHE`` or the default path."""
    from htmlrag_chat.store.db import default_cache_path

    for option in ("replay_db", "cache"):
        value = getattr(args, option, None)
        if value is not None:
            return value, Origin("option", "--" + option.replace("_", "-"))
    path = default_cache_path()
    if os.environ.get("HTMLRAG_CHAT_CACHE"):
        return path, Origin("environment", "HTMLRAG_CHAT_CACHE")
    return path, DEFAULT


def history_origin(args: argparse.Namespace) -> Path:
    """The file conversations are kept in: the cache file (``--cache``,
    ``$HTMLRAG_CHAT_CACHE`` or the default), also in a replay. Under ``--replay`` that is
    the replayed file; ``--replay-db DB`` never writes into DB, the recording."""
    return cache_origin(argparse.Namespace(cache=getattr(args, "cache", None)))[0]


@contextmanager
def history_store(args: argparse.Namespace, cache: Store) -> Iterator[tuple[Store, str]]:
    """Where this run keeps its conversations, and ``""`` or why they are not kept.

    Every ``ask`` and chat is kept, a replayed one too: a replay reads its web cache only
    (``cache`` is read-only), and its conversations go to ``history_origin``, opened for
    writing. One that cannot be (read-only, damaged, from a newer version) gives a scratch file,
    deleted at exit, that starts with a copy of the cache's conversations, so they can
    still be read and followed up."""
    from htmlrag_chat.store.db import Store

    if not cache.readonly:
        yield cache, ""
        return
    path = history_origin(args)
    try:
        kept = Store.open(path)
    except UserError as failure:
        reason = f"{path} cannot be used ({failure})"
    else:
        kept.notice = cache.notice
        with kept:
            yield kept, ""
        return
    with (
        tempfile.TemporaryDirectory(prefix="htmlrag-chat-") as folder,
        Store.open(Path(folder) / "conversations.sqlite3") as scratch,
    ):
        scratch.copy_conversations(cache)
        yield scratch, reason


def open_store(args: argparse.Namespace) -> Store:
    """The store the options name (``cache_origin``), read-only in a replay; a row of it
    left out is a note on stderr."""
    from htmlrag_chat.store.db import Store

    store = Store.open(cache_origin(args)[0], readonly=replaying(args))
    store.notice = lambda message: error(f"note: {text_safe(message)}")
    return store


def replay_file(text: str) -> Path:
    if not text:
        raise argparse.ArgumentTypeError("needs the file to replay")
    return user_path(text)


def user_path(text: str) -> Path:
    """A file option, ``~`` expanded: one that names no home here is argparse's one line."""
    try:
        return expand_user(text)
    except UserError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def age_seconds(text: str) -> float:
    match = _AGE.match(text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"not an age like 90s, 30m, 6h or 2d: {text}")
    return float(match.group(1)) * _AGE_UNITS[match.group(2)]


def check_encoding(label: str | None) -> None:
    """``--encoding`` must be a label a browser knows (``html/charsets.py``): refused once,
    before any input is read, rather than ignored for each."""
    if label is not None and normalize_charset(label) is None:
        raise InputError(f"unknown encoding: {label} (not a WHATWG encoding label)")


def read_input(file: str, encoding: str | None) -> PageInput:
    """Read one input file (at most the page cap), with the failures a user can cause as
    InputError."""
    return PageInput(file, read_page_file(file), encoding)


def progress_printer(enabled: bool) -> EventSink:
    """Stage progress (stage, counts, elapsed) on stderr, each line as ``progress`` words
    it after the time since the start; notices and skipped queries always. The sources,
    listed after the answer, are listed here too only when an LLM starts to prefill, to be
    read meanwhile (an extractive answer comes at once: the list would only say the same
    twice)."""
    start = time.perf_counter()
    ready: list[SourcesReady] = []

    def emit(event: Event) -> None:
        if isinstance(event, SourcesReady):  # listed when a reader starts to prefill
            ready[:] = [event]
            line: str | None = f"sources: {len(event.sources)} ready"
        else:
            line = event_line(event)
        if line is None:
            return
        if isinstance(event, Notice | PartsPlanned | PartEnded):  # a research's parts too
            error(line)
        elif isinstance(event, Skipped):
            if enabled or event.kind == "query":
                error(line)
        elif enabled:
            print(f"[{time.perf_counter() - start:6.2f}s] {line}", file=sys.stderr)
            if isinstance(event, ReaderBusy) and event.phase == "prefill" and ready:
                print(sources_lines(ready.pop().sources), file=sys.stderr)

    return emit


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    if value > MAX_INT:
        raise argparse.ArgumentTypeError(f"too large (at most {MAX_INT}): {text}")
    return value


def print_table(
    columns: Sequence[str], rows: Sequence[Sequence[str]], numbers: Sequence[str] = ()
) -> None:
    """Rows under a header, each column padded to its widest cell (``numbers`` to the right)."""
    table = [list(columns), *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    for row in table:
        cells = [
            cell.rjust(width) if name in numbers else cell.ljust(width)
            for name, cell, width in zip(columns, row, widths, strict=True)
        ]
        print("  ".join(cells).rstrip())


def print_json(value: object, indent: int | None = None) -> None:
    """A command's ``--json`` on stdout: every string in it made safe (``json_safe``: no
    escape sequences, C1 controls, bidi overrides or control tokens, whatever a title, a
    page or a server held), the rest of the text as it is."""
    print(json.dumps(json_safe(value), ensure_ascii=False, indent=indent))


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def error(message: str) -> None:
    """A one-line error or note on stderr. Terminal-safe whatever it quotes (a file name, a
    server's words), as the last guard: quoted text from the web is made safe where it is
    quoted too, for the faces that do not print through here."""
    print(f"{PROG}: {terminal_safe(message)}", file=sys.stderr)
