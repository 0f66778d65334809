"""What the commands share: one-line errors, progress on stderr, argument types, the store."""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.errors import InputError
from htmlrag_chat.events import (
    Event,
    EventSink,
    Notice,
    Progress,
    Searching,
    Skipped,
    StageFinished,
    StageStarted,
)
from htmlrag_chat.pipeline import PageInput
from htmlrag_chat.safety import terminal_safe

if TYPE_CHECKING:  # sqlite-utils loads only for the commands that use the cache
    from htmlrag_chat.store.db import Store

PROG = "htmlrag-chat"
MAX_INPUT_BYTES = 64 * 1024 * 1024

EPILOG = """exit codes:
  0  success (an input with no visible text gives an empty result and a notice)
  1  internal error (set HTMLRAG_CHAT_DEBUG=1 for a traceback)
  2  usage error (a bad option, a device or config file that cannot be used, an output
     that cannot be written), a model that cannot be loaded, or a query missing from a
     replay (for ask: none of its searches in the recording)
  3  an input could not be used (missing, binary, too large, unknown encoding, not in
     the recording, a malformed recording to import); the other inputs were still processed
  4  the cache file cannot be used (corrupted, not SQLite, from a newer version)
  5  the web could not be searched (offline, rate limited, timed out), or the reader's
     server could not be reached or answered with an error
"""

_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def add_command(
    commands: argparse._SubParsersAction,
    name: str,
    summary: str,
    handler: object,
    parents: list[argparse.ArgumentParser] | None = None,
) -> argparse.ArgumentParser:
    command = commands.add_parser(
        name,
        help=summary,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=parents or [],
    )
    command.set_defaults(handler=handler)
    return command


def store_options(default: object = None) -> argparse.ArgumentParser:
    """--cache, --replay and --refresh, accepted before or after the command name (the
    copy after it uses SUPPRESS so that it never overwrites a value given before it)."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("cache")
    group.add_argument(
        "--cache", type=Path, default=default,
        help="the cache file (default $HTMLRAG_CHAT_CACHE, else the user cache directory)",
    )  # fmt: skip
    group.add_argument(
        "--replay", nargs="?", const=True, default=default, metavar="DB",
        help="read only the cache (or DB): no network at all; missing queries and URLs are "
        "reported by name",
    )  # fmt: skip
    group.add_argument(
        "--refresh", type=age_seconds, default=default, metavar="AGE",
        help="redo searches and downloads cached longer ago than AGE (90s, 30m, 6h, 2d)",
    )  # fmt: skip
    return parser


def open_store(args: argparse.Namespace) -> Store:
    """The store the options name: --replay DB, else --cache, else the default path."""
    from htmlrag_chat.store.db import Store, default_cache_path

    replay = getattr(args, "replay", None)
    path = replay if isinstance(replay, str) else getattr(args, "cache", None)
    return Store.open(path or default_cache_path(), readonly=bool(replay))


def age_seconds(text: str) -> float:
    match = _AGE.match(text.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(f"not an age like 90s, 30m, 6h or 2d: {text}")
    return float(match.group(1)) * _AGE_UNITS[match.group(2)]


def read_input(file: str, encoding: str | None) -> PageInput:
    """Read one input file, with the failures a user can cause as InputError."""
    path = Path(file)
    try:
        if path.is_dir():
            raise InputError(f"{file}: is a directory")
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise InputError(f"{file}: {size / 2**20:.0f} MiB is over the 64 MiB input limit")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as error:
        raise InputError(f"{file}: {error.strerror or error}") from None
    return PageInput(file, data, encoding)


def progress_printer(enabled: bool) -> EventSink:
    """Stage progress (stage, counts, elapsed) on stderr; notices and skipped queries always
    (text from the web passes ``terminal_safe`` first)."""
    start = time.perf_counter()

    def emit(event: Event) -> None:
        elapsed = time.perf_counter() - start
        if isinstance(event, Notice):
            error(f"note: {terminal_safe(event.message)}")
        elif isinstance(event, Skipped) and (enabled or event.kind == "query"):
            error(
                f"skipped {event.kind} {terminal_safe(event.what)}: {terminal_safe(event.reason)}"
            )
        elif not enabled:
            return
        elif isinstance(event, Searching):
            queries = " | ".join(terminal_safe(query) for query in event.queries)
            print(
                f"[{elapsed:6.2f}s] round {event.round} ({event.why}): {queries}", file=sys.stderr
            )
        elif isinstance(event, StageStarted):
            items = f" ({event.items})" if event.items is not None else ""
            print(f"[{elapsed:6.2f}s] {event.stage}{items} ...", file=sys.stderr)
        elif isinstance(event, Progress):
            failed = f", {event.failed} failed" if event.failed else ""
            print(
                f"[{elapsed:6.2f}s] {event.stage} {event.done}/{event.total}{failed}",
                file=sys.stderr,
            )
        elif isinstance(event, StageFinished):
            counts = ", ".join(f"{key} {value}" for key, value in event.counts.items())
            print(
                f"[{elapsed:6.2f}s] {event.stage} done in {event.ms:.0f} ms"
                + (f": {counts}" if counts else ""),
                file=sys.stderr,
            )

    return emit


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)
