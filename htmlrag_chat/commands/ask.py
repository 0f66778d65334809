"""``ask``: one question, answered with cited sources, then exit.

Progress (stage, counts, elapsed) goes to stderr, the answer streams to stdout followed by
the numbered sources and any citation the check could not support; ``--json`` prints one
object instead. The exchange is kept as a conversation in the cache (not in a replay,
whose cache is read-only), so the chat app's history shows it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.commands.common import (
    add_command,
    error,
    open_store,
    positive_int,
    progress_printer,
    store_options,
)
from htmlrag_chat.config import READERS, load_reader_settings
from htmlrag_chat.errors import EXIT_OK, EXIT_USAGE, UserError
from htmlrag_chat.events import AnswerDelta, Event, EventSink
from htmlrag_chat.safety import one_line, safe_url
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL
from htmlrag_chat.wiring import PRUNERS, AgentOptions, PruneSettings

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.store.db import Store


def add_commands(commands: argparse._SubParsersAction) -> None:
    ask = add_command(
        commands, "ask", "answer a question from the web, with cited sources", run_ask,
        [store_options(argparse.SUPPRESS), reader_options(argparse.SUPPRESS)],
    )  # fmt: skip
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ask.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )


def reader_options(default: object = None) -> argparse.ArgumentParser:
    """Reader and research options, taken by ``ask`` and by the chat app (the bare command).

    The chat app's copy sits on the top-level parser with the real defaults; ``ask``'s copy
    uses ``argparse.SUPPRESS`` so that it never overwrites a value given before ``ask``.
    """

    def pick(value: object) -> object:
        return value if default is None else default

    parser = argparse.ArgumentParser(add_help=False)
    reader = parser.add_argument_group("reader")
    reader.add_argument(
        "--reader", choices=READERS, default=pick(None),
        help="local transformers model (default), an OpenAI-compatible server, extractive "
        "(no LLM), or auto (server if configured, else a local model on disk, else extractive)",
    )  # fmt: skip
    reader.add_argument(
        "--model", default=pick(None), help="reader model: hub id, local path, or the server's name"
    )
    reader.add_argument(
        "--base-url", default=pick(None),
        help="OpenAI-compatible server, e.g. http://localhost:11434/v1",
    )  # fmt: skip
    reader.add_argument(
        "--config", type=Path, default=pick(None), help="settings file (default: see README)"
    )
    reader.add_argument(
        "--max-tokens", type=positive_int, default=pick(None), help="longest answer (default 512)"
    )
    research = parser.add_argument_group("research")
    research.add_argument(
        "--rounds", type=positive_int, default=pick(2), help="search rounds at most (default 2)"
    )
    research.add_argument(
        "--pages", type=positive_int, default=pick(10), help="pages read per round (default 10)"
    )
    research.add_argument(
        "--pruner", choices=PRUNERS, default=pick("two-stage"),
        help="two-stage (embedding, then the generative pruner when installed), embed, bm25",
    )  # fmt: skip
    research.add_argument(
        "--budget", type=positive_int, default=pick(4096),
        help="tokens of pruned HTML for the reader (default 4096)",
    )  # fmt: skip
    research.add_argument("--embed-model", default=pick(DEFAULT_EMBED_MODEL))
    research.add_argument("--gen-model", default=pick(DEFAULT_GEN_MODEL))
    research.add_argument(
        "--device", default=pick(None), help="auto (cuda, then mps, then cpu), cpu, cuda, mps"
    )
    research.add_argument(
        "--tokenizer", default=pick(None),
        help="count budgets with this tokenizer (default: the local reader's, else Llama-3's, "
        "else an approximation)",
    )  # fmt: skip
    return parser


def agent_options(args: argparse.Namespace) -> AgentOptions:
    """The parsed reader and research options as the agent's settings."""
    return AgentOptions(
        reader=load_reader_settings(
            args.config,
            reader=args.reader,
            model=args.model,
            base_url=args.base_url,
            max_tokens=args.max_tokens,
            device=args.device,
        ),
        prune=PruneSettings(
            pruner=args.pruner,
            budget=args.budget,
            embed_model=args.embed_model,
            gen_model=args.gen_model,
            device=args.device or "auto",
        ),
        tokenizer=args.tokenizer,
        rounds=args.rounds,
        pages=args.pages,
        replay=bool(getattr(args, "replay", None)),
        refresh=getattr(args, "refresh", None),
    )


def run_ask(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise UserError("the question is empty")
    show = progress_printer(args.progress or sys.stderr.isatty())

    def emit(event: Event) -> None:
        if isinstance(event, AnswerDelta):
            if not args.json:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        else:
            show(event)

    with open_store(args) as store:
        answer = asyncio.run(_answer(args, store, emit))
        if not store.readonly:
            conversation = store.new_conversation(args.question[:80])
            message = store.add_message(conversation, "user", args.question)
            store.add_answer(message, **answer.store_record())
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False, indent=2))
    else:
        print_after_answer(answer)
    if getattr(args, "replay", None) and not answer.sources and answer.queries:
        error("none of the searches is in the recording, so there were no sources")
        return EXIT_USAGE
    return EXIT_OK


async def _answer(args: argparse.Namespace, store: Store, emit: EventSink) -> Answer:
    from htmlrag_chat.wiring import build_agent

    agent = build_agent(agent_options(args), store, emit)
    return await agent.ask(args.question)


def print_after_answer(answer: Answer) -> None:
    """The numbered sources, then what the citation check found."""
    lines = ["", ""]
    if answer.sources:
        lines.append("Sources:")
        for source in answer.sources:
            title = one_line(source.title) or "Untitled"
            lines.append(f"[{source.number}] {title} - {safe_url(source.url)}")
    else:
        lines.append("No sources.")
    if answer.removed_citations:
        lines.append(
            f"Removed {answer.removed_citations} citation(s) to sources that do not exist."
        )
    for flag in answer.flags:
        lines.append(f"! {flag}")
    print("\n".join(lines))
