"""``serve``: keep the models loaded for ``ask``, as Ollama keeps its own.

A fresh ``ask`` pays imports, a GPU's start and every model load; while ``serve`` runs, an
``ask`` by the same user with the same settings and cache file hands it the question and
shows its answer as its own (``service/``), saying so in one line. It takes ``ask``'s
options, and the cache options, as ``ask`` does. It listens on a Unix socket in a folder
only this user can enter, never on the network.
"""

from __future__ import annotations

import argparse
import asyncio

from htmlrag_chat.base.errors import EXIT_OK
from htmlrag_chat.commands.common import (
    add_command,
    error,
    open_store,
    progress_printer,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options, agent_options, settings_of


def add_commands(commands: argparse._SubParsersAction) -> None:
    serve = add_command(
        commands, "serve", "keep the models loaded for ask (a warm process for this user)",
        run_serve, [store_options(argparse.SUPPRESS, refresh=True)],
        [("htmlrag-chat serve", "then, elsewhere: htmlrag-chat ask QUESTION"),
         ("htmlrag-chat --replay-db demo.sqlite3 serve --reader local",
          "for ask --replay-db demo.sqlite3 --reader local")],
    )  # fmt: skip
    add_setting_options(serve, "ask")


def run_serve(args: argparse.Namespace) -> int:
    options = agent_options(args, settings_of(args))
    from htmlrag_chat.assembly.wiring import build_parts
    from htmlrag_chat.service.server import Service, serve
    from htmlrag_chat.service.wire import fingerprint

    with open_store(args) as cache:
        parts = build_parts(options, cache, progress_printer(False))
        service = Service(parts, cache, fingerprint(options, cache.path))
        asyncio.run(serve(service, error))
    return EXIT_OK
