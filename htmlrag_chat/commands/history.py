"""``history``: the conversations kept in the cache (every ``ask`` and chat), from the shell.

``history`` lists them, the most recently active first (id, time, questions, reader, title;
``-n``, ``--search``, ``--json``); ``history show ID`` prints one as Markdown, or as JSON;
``history export ID`` writes the file the chat app's Ctrl+S writes, through the same code;
``history rm ID`` deletes one (its questions, answers and sources; the web cache stays).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.commands.common import (
    add_command,
    open_store,
    positive_int,
    print_json,
    print_table,
    store_options,
)
from htmlrag_chat.conversations.export import conversation_markdown, sources_cited_first

if TYPE_CHECKING:
    from htmlrag_chat.store.db import Store

COLUMNS = ("ID", "TIME", "TURNS", "READER", "TITLE")


def add_commands(commands: argparse._SubParsersAction) -> None:
    history = add_command(
        commands, "history", "list, show, export or delete the kept conversations", run_list,
        [store_options(argparse.SUPPRESS)],
        [("htmlrag-chat history -s eiffel", "the conversations that mention it"),
         ("htmlrag-chat history show 3", "conversation 3 as Markdown"),
         ("htmlrag-chat history rm 3", "delete it")],
    )  # fmt: skip
    history.add_argument(
        "-n", "--limit", type=positive_int, default=20, metavar="N",
        help="list the N most recently active (default 20)",
    )  # fmt: skip
    history.add_argument(
        "-s", "--search", metavar="TEXT",
        help="only conversations whose title, questions or answers contain TEXT (any case)",
    )  # fmt: skip
    history.add_argument("--json", action="store_true", help="print JSON instead")
    actions = history.add_subparsers(title="actions (none: list)", metavar="ACTION")
    for name, summary, handler, examples in (
        ("show", "print a conversation as Markdown (or --json)", run_show,
         [("htmlrag-chat history show 3", "as Markdown"),
          ("htmlrag-chat history show 3 --json", "with every answer's sources")]),
        ("export", "write a conversation as Markdown, as the chat app's Ctrl+S", run_export,
         [("htmlrag-chat history export 3", "conversation-3-TITLE.md here"),
          ("htmlrag-chat history export 3 --out-dir notes", "into notes/")]),
        ("rm", "delete a conversation (the cached searches and pages stay)", run_rm,
         [("htmlrag-chat history rm 3", "delete conversation 3"),
          ("htmlrag-chat history -s eiffel", "find the ID first")]),
    ):  # fmt: skip
        action = add_command(
            actions, name, summary, handler, [store_options(argparse.SUPPRESS)], examples
        )
        action.add_argument("id", type=positive_int, metavar="ID", help="from the list")
        if name == "show":
            action.add_argument(
                "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON instead"
            )
        elif name == "export":
            action.add_argument(
                "--out-dir", type=Path, default=Path(), metavar="DIR",
                help="where to write conversation-ID-TITLE.md (default: here)",
            )  # fmt: skip
            action.add_argument(
                "--force", action="store_true", help="write over an earlier export of it"
            )


def run_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        rows = store.conversation_summaries(limit=args.limit, search=args.search)
    if args.json:
        print_json([summary_json(row) for row in rows], indent=2)
    elif rows:
        print_table(COLUMNS, [list_row(row) for row in rows], numbers=("ID", "TURNS"))
    else:
        found = f" matching {args.search!r}" if args.search else ""
        print(f"No conversations{found} in {store.path}.", file=sys.stderr)
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        summary = find_conversation(store, args.id)
        messages = store.messages(args.id)
    if args.json:
        record = summary_json(summary) | {"messages": [_message_json(m) for m in messages]}
        print_json(record, indent=2)
    else:
        sys.stdout.write(conversation_markdown(summary["title"], messages))
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        from htmlrag_chat.conversations.session import ChatSession

        find_conversation(store, args.id)
        session = ChatSession(store)
        session.open(args.id)
        try:
            path = session.export(args.out_dir, replace=args.force)
        except OSError as error:
            reason = error.strerror or error
            raise UserError(f"cannot write into {shown_path(args.out_dir)}: {reason}") from None
    print(path)
    return EXIT_OK


def run_rm(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        if store.readonly:
            raise UserError("a replay's cache is read-only: nothing can be deleted from it")
        summary = find_conversation(store, args.id)
        store.delete_conversation(args.id)
    print(f"deleted conversation {args.id}: {one_line(summary['title'])}", file=sys.stderr)
    return EXIT_OK


def find_conversation(store: Store, conversation_id: int | None) -> dict[str, Any]:
    """Conversation ``conversation_id``, or (None) the most recently active one; an error
    that says how to find one when there is none."""
    if conversation_id is None:
        latest = store.conversation_summaries(limit=1)
        if not latest:
            raise UserError(
                f"no conversation in {shown_path(store.path)} yet: ask a question first"
            )
        return latest[0]
    found = store.conversation(conversation_id)
    if found is None:
        raise UserError(
            f"no conversation {conversation_id} in {shown_path(store.path)} (htmlrag-chat "
            "history lists them)"
        )
    return found


def list_row(row: dict[str, Any]) -> list[str]:
    reader, model = _reader(row["reader"])
    label = "-" if reader is None else reader if model in ("", reader) else f"{reader} {model}"
    when = datetime.fromtimestamp(row["updated_at"]).strftime("%Y-%m-%d %H:%M")
    return [str(row["id"]), when, str(row["turns"]), one_line(label), one_line(row["title"])]


def summary_json(row: dict[str, Any]) -> dict[str, Any]:
    reader, model = _reader(row["reader"])
    return {
        "id": row["id"],
        "title": row["title"],
        "created_at": _iso(row["created_at"]),
        "updated_at": _iso(row["updated_at"]),
        "turns": row["turns"],
        "reader": reader,
        "model": model,
    }


def _message_json(message: dict[str, Any]) -> dict[str, Any]:
    answers = [_answer_json(answer) for answer in message["answers"]]
    return message | {"created_at": _iso(message["created_at"]), "answers": answers}


def _answer_json(answer: dict[str, Any]) -> dict[str, Any]:
    """A stored answer, its sentences and sources as ``ask --json`` gives them (the column
    the sentences are kept in is ``citations``; an answer stored before the evidence check
    has no quotes): the cited sources first, each marked."""
    from htmlrag_chat.evidence.records import claim_record, stored_claims

    urls = {source["number"]: source["url"] for source in answer["sources"]}
    sentences = [claim_record(claim, urls) for claim in stored_claims(answer["citations"])]
    shown = {key: value for key, value in answer.items() if key != "citations"}
    sources = sources_cited_first(answer)  # as ask --json lists them
    return shown | {
        "sentences": sentences,
        "sources": sources,
        "created_at": _iso(answer["created_at"]),
    }


def _reader(stored: str | None) -> tuple[str | None, str | None]:
    """A stored answer's ``kind:model`` as (kind, model); (None, None) before any answer."""
    if stored is None:
        return None, None
    reader, _, model = stored.partition(":")
    return reader, model


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp).astimezone().isoformat(timespec="seconds")
