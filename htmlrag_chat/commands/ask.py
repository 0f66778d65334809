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
from htmlrag_chat.events import AnswerDelta, Event, EventSink, Notice
from htmlrag_chat.safety import terminal_safe
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL
from htmlrag_chat.wiring import PRUNERS, PruneSettings

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.store.db import Store


def add_commands(commands: argparse._SubParsersAction) -> None:
    ask = add_command(
        commands, "ask", "answer a question from the web, with cited sources", run_ask,
        [store_options(argparse.SUPPRESS), reader_options()],
    )  # fmt: skip
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ask.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )


def reader_options() -> argparse.ArgumentParser:
    """Reader and pruning options (``ask`` now; the chat app will take the same)."""
    parser = argparse.ArgumentParser(add_help=False)
    reader = parser.add_argument_group("reader")
    reader.add_argument(
        "--reader", choices=READERS,
        help="local transformers model (default), an OpenAI-compatible server, extractive "
        "(no LLM), or auto (server if configured, else a local model on disk, else extractive)",
    )  # fmt: skip
    reader.add_argument("--model", help="reader model: hub id, local path, or the server's name")
    reader.add_argument(
        "--base-url", help="OpenAI-compatible server, e.g. http://localhost:11434/v1"
    )
    reader.add_argument("--config", type=Path, help="settings file (default: see README)")
    reader.add_argument("--max-tokens", type=positive_int, help="longest answer (default 512)")
    research = parser.add_argument_group("research")
    research.add_argument(
        "--rounds", type=positive_int, default=2, help="search rounds at most (default 2)"
    )
    research.add_argument(
        "--pages", type=positive_int, default=10, help="pages read per round (default 10)"
    )
    research.add_argument(
        "--pruner", choices=PRUNERS, default="two-stage",
        help="two-stage (embedding, then the generative pruner when installed), embed, bm25",
    )  # fmt: skip
    research.add_argument(
        "--budget", type=positive_int, default=4096, help="tokens of pruned HTML for the reader"
    )
    research.add_argument("--embed-model", default=DEFAULT_EMBED_MODEL)
    research.add_argument("--gen-model", default=DEFAULT_GEN_MODEL)
    research.add_argument("--device", help="auto (cuda, then mps, then cpu), cpu, cuda, mps")
    research.add_argument(
        "--tokenizer", help="count budgets with this tokenizer (default: the local reader's, "
        "else Llama-3's, else an approximation)",
    )  # fmt: skip
    return parser


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
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.sources import Sources
    from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings
    from htmlrag_chat.wiring import build_reader, build_stages, fit_budget, reader_counter

    settings = load_reader_settings(
        args.config,
        reader=args.reader,
        model=args.model,
        base_url=args.base_url,
        max_tokens=args.max_tokens,
        device=args.device,
    )
    reader = build_reader(settings, emit)
    counter = reader_counter(reader, args.tokenizer)
    if counter.notice:
        emit(Notice(counter.notice))
    prune = PruneSettings(
        pruner=args.pruner,
        budget=args.budget,
        embed_model=args.embed_model,
        gen_model=args.gen_model,
        device=args.device or "auto",
    )
    chat = getattr(reader, "chat", None)
    if chat is not None:
        prune = fit_budget(prune, chat.context_tokens, settings.max_tokens, emit)
    cache = None if store.readonly else ThreadLocalEmbeddings(store.path)
    agent = Agent(
        web=Sources(
            store,
            replay=bool(getattr(args, "replay", None)),
            max_age=getattr(args, "refresh", None),
        ),
        reader=reader,
        stages=build_stages(prune, emit, cache),
        counter=counter.counter,
        emit=emit,
        rounds=args.rounds,
        max_pages=args.pages,
    )
    return await agent.ask(args.question)


def print_after_answer(answer: Answer) -> None:
    """The numbered sources, then what the citation check found."""
    lines = ["", ""]
    if answer.sources:
        lines.append("Sources:")
        for source in answer.sources:
            title = terminal_safe(source.title) or "Untitled"
            lines.append(f"[{source.number}] {title} - {terminal_safe(source.url)}")
    else:
        lines.append("No sources.")
    if answer.removed_citations:
        lines.append(
            f"Removed {answer.removed_citations} citation(s) to sources that do not exist."
        )
    for flag in answer.flags:
        lines.append(f"! {flag}")
    print("\n".join(lines))
