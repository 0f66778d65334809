"""``search`` and ``fetch``: the web inputs on their own, through the same cache.

``fetch`` answers the question users of such tools ask most ("why was this page skipped?"):
one JSON line per URL with its outcome, status, size, time and reason (on a terminal, a
table, unless ``--json``), and a line on stderr for each URL that did not come back ok. Its
exit status says how many came back ok, downloaded or from the cache: all (0), none (3) or
some (6).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from dataclasses import asdict

from htmlrag_chat.base.errors import EXIT_INPUT, EXIT_OK, EXIT_PARTIAL
from htmlrag_chat.base.events import Progress, stage
from htmlrag_chat.base.safety import json_safe, safe_url, text_safe
from htmlrag_chat.commands.common import (
    add_command,
    error,
    human_size,
    open_store,
    print_table,
    progress_printer,
    replaying,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options, settings_of
from htmlrag_chat.web.results import FetchResult, Outcome
from htmlrag_chat.web.settings import SearchSettings


def add_commands(commands: argparse._SubParsersAction) -> None:
    parents = [store_options(argparse.SUPPRESS, refresh=True)]
    search = add_command(
        commands, "search", "search the web, one JSON line per result", run_search, parents,
        [('htmlrag-chat search "eiffel tower designer"', "the results, cached"),
         ("htmlrag-chat search --region de-de --max-results 3 eiffelturm", "three, from Germany")],
    )  # fmt: skip
    search.add_argument("query", metavar="QUERY", help="what to search for")
    add_setting_options(search, "search")

    fetch = add_command(
        commands, "fetch", "download pages: a line each (JSON when piped), failures on stderr",
        run_fetch, parents,
        [("htmlrag-chat fetch https://example.org/", "outcome, status, size, time, reason"),
         ("htmlrag-chat --replay fetch https://example.org/", "what the cache holds")],
    )  # fmt: skip
    fetch.add_argument("urls", nargs="+", metavar="URL", help="http(s) addresses to download")
    fetch.add_argument(
        "--allow-private",
        action="store_true",
        help="allow loopback and private-network addresses (refused by default)",
    )
    fetch.add_argument("--progress", action="store_true", help="show progress on stderr")
    fetch.add_argument(
        "--json", action="store_true",
        help="one JSON line per URL also on a terminal (the output when stdout is not one)",
    )  # fmt: skip


def run_search(args: argparse.Namespace) -> int:
    from htmlrag_chat.sources.recorder import (
        WebRecorder,
    )  # aiohttp: only for commands that go online
    from htmlrag_chat.web.search import WebSearcher

    settings = SearchSettings(**settings_of(args).section("search"))
    searcher = WebSearcher(settings, progress_printer(False))
    with open_store(args) as store:
        recorder = WebRecorder(store, searcher, replay=replaying(args), max_age=args.refresh)
        for result in asyncio.run(recorder.search(args.query)):
            print(json.dumps(json_safe(asdict(result)), ensure_ascii=False))
    return EXIT_OK


def run_fetch(args: argparse.Namespace) -> int:
    from htmlrag_chat.sources.recorder import WebRecorder
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
    if args.json or not sys.stdout.isatty():  # a script reads it
        for result in results:
            print(json.dumps(json_safe(result.summary()), ensure_ascii=False))
    else:  # a person reads it
        print_table(FETCH_COLUMNS, [fetch_row(result) for result in results], ("STATUS", "SIZE"))
    for result in results:  # why a page did not come, whatever stdout is
        if result.outcome is not Outcome.OK:
            reason = text_safe(result.reason or "") or result.outcome.value
            error(f"{safe_url(result.url)}: {reason}")
    return EXIT_OK if ok == len(results) else EXIT_INPUT if ok == 0 else EXIT_PARTIAL


FETCH_COLUMNS = ("OUTCOME", "STATUS", "SIZE", "FROM", "URL")


def fetch_row(result: FetchResult) -> list[str]:
    """One URL's line in a terminal (the reason a page did not come is on stderr)."""
    return [
        result.outcome.value,
        str(result.status) if result.status else "-",
        human_size(result.bytes) if result.bytes else "-",
        "cache" if result.from_cache else "web",
        safe_url(result.url),
    ]
