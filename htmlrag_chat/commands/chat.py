"""The bare command: ``htmlrag-chat [options]`` opens the chat app (so does ``chat``).

It takes the same cache, reader and research options as ``ask``, and keeps its
conversations where ``ask`` does (``common.history_store``: the cache file, also in a
replay, whose web cache it only reads).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from htmlrag_chat.base.errors import EXIT_INTERNAL, EXIT_OK, UserError
from htmlrag_chat.commands.common import add_command, history_store, open_store, store_options
from htmlrag_chat.commands.options import add_setting_options, agent_options


def add_commands(commands: argparse._SubParsersAction) -> None:
    """``chat``: the chat app by name, for those who type a command (the same as none)."""
    chat = add_command(
        commands, "chat", "open the chat app (the same as no command)", run_chat,
        [store_options(argparse.SUPPRESS, refresh=True)],
        [("htmlrag-chat chat", "the chat app"),
         ("htmlrag-chat chat --replay-db demo.sqlite3 --reader extractive", "offline")],
    )  # fmt: skip
    add_setting_options(chat, "chat")


def run_chat(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UserError(
            "the chat app needs a terminal; in scripts and pipes use: htmlrag-chat ask QUESTION"
        )
    options = agent_options(args)  # a bad config file fails here, before the screen opens
    from htmlrag_chat.assembly.wiring import check_sources
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.tui.app import ChatApp

    check_sources(options)  # and so do documents that cannot be read

    with open_store(args) as cache, history_store(args, cache) as (history, not_kept):
        session = ChatSession(history, kept=not not_kept)
        app = ChatApp(options, cache, session, export_dir=Path.cwd())
        app.run()
    # An app that failed (its stylesheet missing, an error in a handler) has printed why as
    # it closed; the exit status must say so too.
    return EXIT_INTERNAL if app.return_code else EXIT_OK
