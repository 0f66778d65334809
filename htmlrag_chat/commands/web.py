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
from dataclasses import asdict

from htmlrag_chat.commands.common import (
    add_command,
    error,
    open_store,
    positive_int,
    progress_printer,
    replaying,
    store_options,
)
from htmlrag_chat.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL
from htmlrag_chat.events import Progress, stage
from htmlrag_chat.safety import json_safe
from htmlrag_chat.web.results import FetchResult, Outcome
from htmlrag_chat.web.search import DEFAULT_BACKENDS, SearchSettings


def add_commands(commands: argparse._SubParsersAction) -> None:
    parents = [store_options(argparse.SUPPRESS)]
    search = add_command(commands, "search", "search the web", run_search, parents)
    search.add_argument("query")
    search.add_argument("--max-results", type=positive_int, default=8)
    search.add_argument("--region", default="wt-wt", help="e.g. de-de, us-en (default: none)")
    search.add_argument("--safesearch", choices=["on", "moderate", "off"], default="moderate")
    search.add_argument(
        "--backends",
        default=",".join(DEFAULT_BACKENDS),
        help=f"search engines in order of preference (default {','.join(DEFAULT_BACKENDS)})",
    )

    fetch = add_command(commands, "fetch", "download pages, one JSON line each", run_fetch, parents)
    fetch.add_argument("urls", nargs="+", metavar="URL")
    fetch.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback and private-network addresses (refused by default)",
    )
    fetch.add_argument("--progress", action="store_true", help="show progress on stderr")


def search_settings(args: argparse.Namespace) -> SearchSettings:
    return SearchSettings(
        backends=tuple(name.strip() for name in args.backends.split(",") if name.strip()),
        region=args.region,
        safesearch=args.safesearch,
        max_results=args.max_results,
    )


def run_search(args: argparse.Namespace) -> int:
    from htmlrag_chat.recorder import WebRecorder  # aiohttp: only for commands that go online

    with open_store(args) as store:
        recorder = WebRecorder(store, replaying(args), args.refresh, search_settings(args))
        for result in asyncio.run(recorder.search(args.query)):
            print(json.dumps(json_safe(asdict(result)), ensure_ascii=False))
    return EXIT_OK


def run_fetch(args: argparse.Namespace) -> int:
    from htmlrag_chat.recorder import NOT_RECORDED, WebRecorder
    from htmlrag_chat.web.fetch import FetchPolicy

    show = progress_printer(args.progress or sys.stderr.isatty())
    policy = FetchPolicy(allow_private=args.allow_private)
    tally = Counter[bool]()  # pages done, by whether they came back OK

    def report(result: FetchResult) -> None:
        tally[result.outcome is Outcome.OK] += 1
        show(Progress("fetch", tally.total(), len(args.urls), tally[False]))

    with open_store(args) as store:
        recorder = WebRecorder(store, replaying(args), args.refresh, fetch_policy=policy)
        with stage(show, "fetch", len(args.urls)) as counts:
            results = asyncio.run(recorder.fetch_many(args.urls, report))
            ok = sum(r.outcome is Outcome.OK for r in results)
            counts.update(ok=ok, pages=len(results))
    for result in results:
        print(json.dumps(json_safe(result.summary()), ensure_ascii=False))
    for result in results:
        if result.reason == NOT_RECORDED:
            error(f"{result.url}: {NOT_RECORDED}")
    return EXIT_OK if ok == len(results) else EXIT_INPUT if ok == 0 else EXIT_PARTIAL
