"""``search`` and ``fetch``: the web inputs on their own, through the same cache.

``fetch`` answers the question users of such tools ask most ("why was this page skipped?"):
one JSON line per URL with its outcome, status, size, time and reason. Its exit status says
how many came back ok, downloaded or from the cache: all (0), none (3) or some (6).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict, replace
from pathlib import Path

from htmlrag_chat.commands.common import (
    add_command,
    error,
    open_store,
    positive_int,
    progress_printer,
    replaying,
    store_options,
)
from htmlrag_chat.config import resolve_search_settings
from htmlrag_chat.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL
from htmlrag_chat.events import Progress, stage
from htmlrag_chat.web.results import FetchResult, Outcome
from htmlrag_chat.web.settings import search_options, search_overrides


def add_commands(commands: argparse._SubParsersAction) -> None:
    parents = [store_options(argparse.SUPPRESS)]
    search = add_command(
        commands, "search", "search the web", run_search,
        [*parents, search_options(argparse.SUPPRESS)],
    )  # fmt: skip
    search.add_argument("query")
    search.add_argument("--max-results", type=positive_int, default=8)
    search.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="settings file")

    fetch = add_command(commands, "fetch", "download pages, one JSON line each", run_fetch, parents)
    fetch.add_argument("urls", nargs="+", metavar="URL")
    fetch.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback and private-network addresses (refused by default)",
    )
    fetch.add_argument("--progress", action="store_true", help="show progress on stderr")


def run_search(args: argparse.Namespace) -> int:
    from htmlrag_chat.recorder import WebRecorder  # aiohttp: only for commands that go online
    from htmlrag_chat.web.search import WebSearcher

    settings = resolve_search_settings(getattr(args, "config", None), search_overrides(args))[0]
    searcher = WebSearcher(replace(settings, max_results=args.max_results), progress_printer(False))
    with open_store(args) as store:
        recorder = WebRecorder(store, searcher, replay=replaying(args), max_age=args.refresh)
        for result in asyncio.run(recorder.search(args.query)):
            print(json.dumps(asdict(result), ensure_ascii=False))
    return EXIT_OK


def run_fetch(args: argparse.Namespace) -> int:
    from htmlrag_chat.recorder import NOT_RECORDED, WebRecorder
    from htmlrag_chat.web.fetch import Fetcher, FetchPolicy

    show = progress_printer(args.progress or sys.stderr.isatty())
    policy = FetchPolicy(allow_private=args.allow_private)
    tally = Counter[bool]()  # pages done, by whether they came back OK

    def report(result: FetchResult) -> None:
        tally[result.outcome is Outcome.OK] += 1
        show(Progress("fetch", tally.total(), len(args.urls), tally[False]))

    with open_store(args) as store:
        recorder = WebRecorder(
            store, fetcher=Fetcher(policy), replay=replaying(args), max_age=args.refresh
        )
        with stage(show, "fetch", len(args.urls)) as counts:
            results = asyncio.run(recorder.fetch_many(args.urls, report))
            ok = sum(r.outcome is Outcome.OK for r in results)
            counts.update(ok=ok, pages=len(results))
    for result in results:
        print(json.dumps(result.summary(), ensure_ascii=False))
    for result in results:
        if result.reason == NOT_RECORDED:
            error(f"{result.url}: {NOT_RECORDED}")
    return EXIT_OK if ok == len(results) else EXIT_INPUT if ok == 0 else EXIT_PARTIAL
