"""``cache``: look after the SQLite cache, and move recordings in and out of it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from htmlrag_chat.base.atomic import check_replaceable
from htmlrag_chat.base.errors import EXIT_OK, InputError, UserError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.commands.common import add_command, cache_origin, open_store, store_options


def add_commands(commands: argparse._SubParsersAction) -> None:
    cache = add_command(
        commands, "cache", "inspect, clear, vacuum, export or import the cache", run_cache,
        [store_options(argparse.SUPPRESS)],
        [("htmlrag-chat cache stats", "size and counts, as JSON"),
         ("htmlrag-chat cache export --jsonl recording.jsonl", "a recording to share"),
         ("htmlrag-chat --cache demo.sqlite3 cache import --jsonl recording.jsonl", "replay it")],
    )  # fmt: skip
    cache.add_argument(
        "action", choices=["stats", "clear", "vacuum", "export", "import"],
        help="stats (JSON), clear (the web cache; conversations stay), vacuum (reclaim "
        "space), export or import a recording (--jsonl)",
    )  # fmt: skip
    cache.add_argument(
        "--searxng",
        type=Path,
        metavar="FILE",
        help="import: a SearXNG JSON response (/search?q=...&format=json), as a search",
    )
    cache.add_argument(
        "--jsonl",
        type=Path,
        help='export/import: one {"query", "results": [{"url", "title", "snippet", "html"}]} '
        "object per line",
    )
    cache.add_argument(
        "--force", action="store_true", help="export: write over an existing --jsonl file"
    )


def run_cache(args: argparse.Namespace) -> int:
    if args.searxng is not None and (args.action != "import" or args.jsonl is not None):
        raise UserError("--searxng FILE goes with cache import, instead of --jsonl")
    if args.action in ("export", "import") and args.jsonl is None and args.searxng is None:
        raise UserError(f"cache {args.action} needs --jsonl FILE")
    if args.force and args.action != "export":
        raise UserError("--force goes with cache export (an existing --jsonl file)")
    if args.action == "import":  # before the cache is opened, which would create it
        readable(args.searxng if args.searxng is not None else args.jsonl)
    if args.action == "export":  # likewise: refused before any work
        check_replaceable(args.jsonl, args.force)
    path = cache_origin(args)[0]
    created = args.action == "import" and not path.exists()
    try:
        return _run(args)
    except UserError:
        if created:  # an import that failed into a new file leaves no empty cache behind
            for end in ("", "-wal", "-shm"):
                path.with_name(path.name + end).unlink(missing_ok=True)
        raise


def readable(path: Path) -> None:
    """``path`` can be opened for reading, or an ``InputError`` says why (exit 3)."""
    try:
        with open(path, "rb"):
            pass
    except OSError as error:
        raise InputError(f"cannot read {shown_path(path)}: {error.strerror or error}") from None


def _run(args: argparse.Namespace) -> int:
    from htmlrag_chat.store.recording import export_jsonl, import_jsonl, import_searxng

    with open_store(args) as store:
        if args.action == "stats":
            store.check()  # as import does: the two agree on which files are damaged
            print(json.dumps({"path": str(store.path), **store.stats()}))
        elif args.action == "clear":
            store.clear()
        elif args.action == "vacuum":
            store.vacuum()
        elif args.action == "export":
            print(json.dumps({"exported": export_jsonl(store, args.jsonl, args.force)}))
        elif args.searxng is not None:
            print(json.dumps({"imported": import_searxng(store, args.searxng)}))
        else:
            print(json.dumps({"imported": import_jsonl(store, args.jsonl)}))
    return EXIT_OK
