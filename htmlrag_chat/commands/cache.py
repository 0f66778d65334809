"""``cache``: look after the SQLite cache, and move recordings in and out of it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from htmlrag_chat.commands.common import add_command, open_store, store_options
from htmlrag_chat.errors import EXIT_OK, UserError


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


def run_cache(args: argparse.Namespace) -> int:
    from htmlrag_chat.store.recording import export_jsonl, import_jsonl, import_searxng

    if args.searxng is not None and (args.action != "import" or args.jsonl is not None):
        raise UserError("--searxng FILE goes with cache import, instead of --jsonl")
    if args.action in ("export", "import") and args.jsonl is None and args.searxng is None:
        raise UserError(f"cache {args.action} needs --jsonl FILE")
    with open_store(args) as store:
        if args.action == "stats":
            store.check()  # as import does: the two agree on which files are damaged
            print(json.dumps({"path": str(store.path), **store.stats()}))
        elif args.action == "clear":
            store.clear()
        elif args.action == "vacuum":
            store.vacuum()
        elif args.action == "export":
            print(json.dumps({"exported": export_jsonl(store, args.jsonl)}))
        elif args.searxng is not None:
            print(json.dumps({"imported": import_searxng(store, args.searxng)}))
        else:
            print(json.dumps({"imported": import_jsonl(store, args.jsonl)}))
    return EXIT_OK
