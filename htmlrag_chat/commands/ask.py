"""``ask``: one question, answered with cited sources, then exit.

The question is the argument, or stdin when it is ``-`` or missing and stdin is not a
terminal (``echo "..." | htmlrag-chat ask``). Progress (stage, counts, elapsed) goes to
stderr, the answer streams to stdout followed by the numbered sources and any citation the
check could not support; ``--json`` prints one object instead. The exchange is kept as a
conversation in the cache (not in a replay, whose cache is read-only), through the same
``ChatSession`` as the chat app: ``-c`` and ``--conversation ID`` continue one with the
history and sources a follow-up gets in the app.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.commands.common import (
    add_command,
    error,
    open_store,
    positive_float,
    positive_int,
    progress_printer,
    replaying,
    store_options,
)
from htmlrag_chat.commands.history import find_conversation
from htmlrag_chat.config import DEFAULT_DEADLINE, READERS, load_deadline, load_reader_settings
from htmlrag_chat.errors import EXIT_OK, EXIT_USAGE, InputError, UserError
from htmlrag_chat.events import AnswerDelta, Event, EventSink, stage
from htmlrag_chat.recipe import DEFAULT_PRUNER, PRUNERS
from htmlrag_chat.safety import one_line, safe_url
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL
from htmlrag_chat.wiring import AgentOptions, PruneSettings

LATE_PAGE_GRACE = 3.0  # seconds ``ask`` waits, after answering, for pages still downloading

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.store.db import Store

MAX_QUESTION_BYTES = 100_000  # a question on stdin longer than this is a mistaken pipe


def add_commands(commands: argparse._SubParsersAction) -> None:
    ask = add_command(
        commands, "ask", "answer a question from the web, with cited sources", run_ask,
        [store_options(argparse.SUPPRESS), reader_options(argparse.SUPPRESS)],
    )  # fmt: skip
    ask.add_argument(
        "question", nargs="?", metavar="QUESTION",
        help="the question; '-' or none (with stdin not a terminal) reads it from stdin",
    )  # fmt: skip
    follow = ask.add_mutually_exclusive_group()
    follow.add_argument(
        "-c", "--continue", dest="follow_up", action="store_true",
        help="follow up the most recent conversation (see: htmlrag-chat history)",
    )  # fmt: skip
    follow.add_argument(
        "--conversation", type=positive_int, metavar="ID", help="follow up conversation ID"
    )
    ask.add_argument("--json", action="store_true", help="print one JSON object at the end")
    ask.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )


def reader_options(default: object = None, hidden: Collection[str] = ()) -> argparse.ArgumentParser:
    """Reader and research options, taken by ``ask`` and by the chat app (the bare command).

    The chat app's copy sits on the top-level parser with the real defaults; ``ask``'s copy
    uses ``argparse.SUPPRESS`` so that it never overwrites a value given before ``ask``.
    Commands that take the options but ignore some (``models``, ``config``) name those in
    ``hidden``: they are still accepted, as before any command, but left out of the help.
    """

    def pick(value: object) -> object:
        return value if default is None else default

    parser = argparse.ArgumentParser(add_help=False)
    reader = parser.add_argument_group("reader")
    reader.add_argument(
        "--reader", choices=READERS, default=pick(None),
        help="auto (default: the configured server, else Ollama, LM Studio, llama.cpp or vLLM "
        "found on 127.0.0.1, else a local model on disk, else extractive), local (transformers), "
        "openai (the server at --base-url), extractive (no LLM)",
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
        "--deadline", type=positive_float, default=pick(None), metavar="SECONDS",
        help="go on without pages still downloading this long after the first one arrived "
        f"(they are cached for the next question; default: deadline in the [web] table of the "
        f"config file, else {DEFAULT_DEADLINE:g})",
    )  # fmt: skip
    research.add_argument(
        "--pruner", choices=PRUNERS, default=pick(DEFAULT_PRUNER),
        help="two-stage (the fused stage, then the generative pruner when installed), or one "
        "stage of: fused (BM25 + embeddings), embed, bm25, gen",
    )  # fmt: skip
    research.add_argument(
        "--budget", type=positive_int, default=pick(None),
        help="tokens of pruned HTML for the reader (default 2048 for a reader on this "
        "machine's CPU, else 4096)",
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
    for action in parser._actions:
        if action.dest in hidden:
            action.help = argparse.SUPPRESS
    return parser


def agent_options(args: argparse.Namespace) -> AgentOptions:
    """The parsed reader and research options as the agent's settings."""
    return AgentOptions(
        reader=load_reader_settings(args.config, **reader_overrides(args)),
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
        replay=replaying(args),
        refresh=getattr(args, "refresh", None),
        deadline=args.deadline if args.deadline is not None else load_deadline(args.config),
    )


def reader_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The reader settings the options give (None: not given), by setting name."""
    return {
        "reader": args.reader,
        "model": args.model,
        "base_url": args.base_url,
        "max_tokens": args.max_tokens,
        "device": args.device,
    }


def run_ask(args: argparse.Namespace) -> int:
    question = read_question(args.question)
    show = progress_printer(args.progress or sys.stderr.isatty())

    def emit(event: Event) -> None:
        if isinstance(event, AnswerDelta):
            if not args.json:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        else:
            show(event)

    # The first progress line comes before the cache and the conversation code are loaded.
    with stage(emit, "open"):
        from htmlrag_chat.conversations.session import ChatSession

        store = open_store(args)
    with store:
        session = ChatSession(store)
        if args.follow_up or args.conversation:
            session.open(find_conversation(store, args.conversation)["id"])
        answer = asyncio.run(_answer(args, store, session, question, emit))
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False, indent=2))
    else:
        print_after_answer(answer)
    if replaying(args) and not answer.sources and answer.queries:
        error("none of the searches is in the recording, so there were no sources")
        return EXIT_USAGE
    return EXIT_OK


def read_question(given: str | None) -> str:
    """The question: the argument, else stdin when it is ``-`` or missing and stdin is not a
    terminal (a pipe, a file)."""
    if given not in (None, "-"):
        question = given
    elif sys.stdin is None or (given is None and sys.stdin.isatty()):
        raise UserError(
            'ask needs a question: htmlrag-chat ask "QUESTION", or on stdin: '
            'echo "QUESTION" | htmlrag-chat ask'
        )
    else:
        question = _stdin_text()
    if not question.strip():
        raise UserError("the question is empty")
    return question.strip()


def _stdin_text() -> str:
    """stdin as UTF-8 text, read to a bound (a mistaken pipe may never end)."""
    stream = getattr(sys.stdin, "buffer", None)
    data = (stream or sys.stdin).read(MAX_QUESTION_BYTES + 1)  # bytes, or text if no buffer
    if len(data) > MAX_QUESTION_BYTES:
        raise InputError(f"the question on stdin is over {MAX_QUESTION_BYTES // 1000} kB")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the question on stdin is not UTF-8 text") from None


async def _answer(
    args: argparse.Namespace, store: Store, session: ChatSession, question: str, emit: EventSink
) -> Answer:
    """Build the agent (bad settings fail here, before anything is saved), save the
    question, answer it with the conversation's turns, save the answer (not in a replay:
    its cache is read-only)."""
    from htmlrag_chat.wiring import build_agent

    agent = build_agent(agent_options(args), store, emit)
    message_id = None if store.readonly else session.question_asked(question)
    try:
        answer = await agent.ask(question, list(session.turns))
    finally:
        # Pages the deadline left behind get a moment to land in the cache.
        await agent.web.settle(LATE_PAGE_GRACE)
    if message_id is not None:
        session.answered(message_id, answer)
    return answer


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
