"""The bare command: ``htmlrag-chat [options]`` opens the chat app (so does ``chat``).

It takes the same cache, reader and research options as ``ask``. A replay's cache is
read-only, so the conversations of a replay session go to a scratch file that is deleted
at exit (the header says so); it starts with a copy of the cache's conversations, so the
History panel shows what ``htmlrag-chat history`` shows.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.commands.common import add_command, open_store, store_options
from htmlrag_chat.commands.options import add_setting_options, agent_options
from htmlrag_chat.errors import EXIT_INTERNAL, EXIT_OK, UserError

if TYPE_CHECKING:
    from htmlrag_chat.store.db import Store


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
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.tui.app import ChatApp

    with open_store(args) as cache, history_store(cache) as history:
        session = ChatSession(history, kept=history is cache)
        app = ChatApp(options, cache, session, export_dir=Path.cwd())
        app.run()
    # An app that failed (its stylesheet missing, an error in a handler) has printed why as
    # it closed; the exit status must say so too.
    return EXIT_INTERNAL if app.return_code else EXIT_OK


@contextmanager
def history_store(cache: Store) -> Iterator[Store]:
    """Where conversations are kept: the cache itself, or a scratch file in a replay."""
    if not cache.readonly:
        yield cache
        return
    from htmlrag_chat.store.db import Store

    with (
        tempfile.TemporaryDirectory(prefix="htmlrag-chat-") as folder,
        Store.open(Path(folder) / "conversations.sqlite3") as scratch,
    ):
        scratch.copy_conversations(cache)
        yield scratch
