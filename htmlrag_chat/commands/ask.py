"""``ask``: one question, answered with cited sources, then exit.

The question is the argument, or stdin when it is ``-`` or missing and stdin is not a
terminal (``echo "..." | htmlrag-chat ask``). Progress (stage, counts, elapsed) goes to
stderr, the answer streams to stdout followed by the numbered sources and any citation the
check could not support; ``--json`` prints one object instead. The exchange is kept as a
conversation in the cache file (in a replay too, whose web cache is only read:
``common.history_store``), through the same ``ChatSession`` as the chat app: ``-c`` and
``--conversation ID`` continue one with the history and sources a follow-up gets in the app.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import EXIT_OK, InputError, UserError
from htmlrag_chat.base.events import EventSink
from htmlrag_chat.base.safety import one_line, safe_url, terminal_safe, text_safe
from htmlrag_chat.base.sources import Source, cited_first
from htmlrag_chat.commands.common import (
    add_command,
    positive_int,
    store_options,
)
from htmlrag_chat.commands.history import find_conversation
from htmlrag_chat.commands.options import add_setting_options, agent_options
from htmlrag_chat.commands.output import AskOutput, choose_form, conversation_store

LATE_PAGE_GRACE = 3.0  # seconds ``ask`` waits, after answering, for pages still downloading

if TYPE_CHECKING:
    from htmlrag_chat.agent.answer import Answer
    from htmlrag_chat.assembly.wiring import AgentOptions
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.service.client import Call
    from htmlrag_chat.store.db import Store

MAX_QUESTION_BYTES = 100_000  # a question on stdin longer than this is a mistaken pipe


EXAMPLES = (
    ('htmlrag-chat ask "Who designed the Eiffel tower?"', "answer with cited sources"),
    ('htmlrag-chat ask -c "Which iPhones get it?"', "follow up the last conversation"),
    ("htmlrag-chat --replay-db demo.sqlite3 ask -m qwen2.5:7b --json -", "question on stdin"),
)


def add_commands(commands: argparse._SubParsersAction) -> None:
    ask = add_command(
        commands, "ask", "answer a question from the web, with cited sources", run_ask,
        [store_options(argparse.SUPPRESS, refresh=True)], EXAMPLES,
    )  # fmt: skip
    add_setting_options(ask, "ask")
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
        "--service", action=argparse.BooleanOptionalAction, default=True,
        help="hand the question to this user's running 'htmlrag-chat serve' (models loaded) "
        "when it runs with the same settings; --no-service: always answer in this process",
    )  # fmt: skip
    output_options(ask)


def output_options(ask: argparse.ArgumentParser, stream: bool = True) -> None:
    """How ``ask`` (and ``research``, which has no answer to ``stream``) shows its work
    (``commands/output.py``)."""
    ask.add_argument(
        "--progress", action="store_true",
        help="show progress on stderr even when it is not a terminal (as a timestamped log)",
    )  # fmt: skip
    if stream:
        ask.add_argument(
            "--no-stream", dest="stream", action="store_false",
            help="print the answer once it is complete instead of as it is written",
        )  # fmt: skip
    ask.add_argument(
        "--quotes", action=argparse.BooleanOptionalAction, default=None,
        help="under the answer, the words of the sources that back each sentence (default: "
        "in a terminal; --json always has them)",
    )  # fmt: skip
    verbosity = ask.add_mutually_exclusive_group()
    verbosity.add_argument(
        "-q", "--quiet", action="store_true",
        help="print only the answer and its sources: no progress, no notes",
    )  # fmt: skip
    verbosity.add_argument(
        "-v", "--verbose", action="store_true",
        help="show every stage as a timestamped log, and every note in full",
    )  # fmt: skip


def run_ask(args: argparse.Namespace) -> int:
    question = read_question(args.question)
    options = agent_options(args)  # a bad setting from any source stops here, before any work
    form = choose_form(
        quiet=args.quiet, verbose=args.verbose, progress=args.progress,
        terminal=sys.stderr.isatty(),
    )  # fmt: skip
    with AskOutput(form, stream=args.stream, answer=not args.json) as output:
        # The first progress line comes before the cache and the conversation code load.
        with conversation_store(args, output, "this exchange is not kept") as (store, session):
            if args.follow_up or args.conversation:
                session.open(find_conversation(session.store, args.conversation)["id"])
            answer = asyncio.run(_answer(options, store, session, question, output, args.service))
        output.finish(answer.text)
    if args.json:
        print(json.dumps(answer.to_json(), ensure_ascii=False, indent=2))
    else:
        quotes = args.quotes if args.quotes is not None else sys.stdout.isatty()
        print_after_answer(answer, quiet=args.quiet, quotes=quotes, streamed=output.streamed)
    return EXIT_OK


def read_question(given: str | None, command: str = "ask") -> str:
    """The question: the argument, else stdin when it is ``-`` or missing and stdin is not a
    terminal (a pipe, a file)."""
    if given not in (None, "-"):
        question = given
    elif sys.stdin is None or (given is None and sys.stdin.isatty()):
        raise UserError(
            f'{command} needs a question: htmlrag-chat {command} "QUESTION", or on stdin: '
            f'echo "QUESTION" | htmlrag-chat {command}'
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
    options: AgentOptions,
    store: Store,
    session: ChatSession,
    question: str,
    emit: EventSink,
    service: bool = False,
) -> Answer:
    """Build the agent (bad settings fail here, before anything is saved), or hand the
    question to the user's running service (``service``: when one runs with these
    settings), save the question, answer it with the conversation's turns, save the answer
    (in a replay too: ``session`` keeps them in the history file). A question whose answer
    fails or is stopped stays in the history without an answer, as in the chat app: ``ask
    -c`` then follows up its conversation, and follow-ups read only answered turns."""
    call = await _service_call(options, store, session, question, emit) if service else None
    agent = None
    if call is None:
        from htmlrag_chat.assembly.wiring import build_agent

        agent = build_agent(options, store, emit)
    message_id = session.question_asked(question)
    try:
        if call is not None:
            answer = await call.answer(emit)
        else:
            assert agent is not None
            answer = await agent.ask(question, list(session.turns))
    finally:
        # Pages the deadline left behind get a moment to land in the cache.
        if agent is not None:
            await agent.settle(LATE_PAGE_GRACE)
    session.answered(message_id, answer)
    return answer


async def _service_call(
    options: AgentOptions, store: Store, session: ChatSession, question: str, emit: EventSink
) -> Call | None:
    """The question accepted by this user's service, when one runs with these settings
    and this cache file (``service/``)."""
    from htmlrag_chat.service.client import connect
    from htmlrag_chat.service.wire import fingerprint

    return await connect(fingerprint(options, store.path), question, list(session.turns), emit)


def print_after_answer(
    answer: Answer, quiet: bool = False, quotes: bool = False, streamed: bool = False
) -> None:
    """The answer again with its corrected citations, when it was ``streamed`` as written
    and the check corrected it; with ``quotes``, each backed sentence's quotes; the sources
    (cited first); then (unless ``quiet``) what the check corrected and the sentences no
    source backs."""
    from htmlrag_chat.evidence.correction import MARK
    from htmlrag_chat.evidence.words import evidence_lines

    lines = ["", ""]
    if streamed and answer.written:
        lines += [f"With the check's corrections ({MARK}: its citation, not the reader's):"]
        lines += [text_safe(answer.text), ""]
    evidence = evidence_lines(answer.claims) if quotes else []
    if evidence:
        lines += ["Evidence:", *map(text_safe, evidence), ""]
    lines += source_lines(answer.sources, answer.cited_numbers, answer.found_numbers)
    if answer.removed_citations and not quiet:
        lines.append(
            f"Removed {answer.removed_citations} citation(s) to sources that do not exist."
        )
    if not quiet:
        lines += [f"{MARK} {text_safe(line)}" for line in answer.corrections]
        lines += [f"! {text_safe(flag)}" for flag in answer.flags]
    print("\n".join(lines))


def source_lines(
    sources: Sequence[Source], cited: Collection[int], found: Collection[int] = ()
) -> list[str]:
    """The sources the answer cites, one a line; then those it does not cite that the check
    ``found`` backing a sentence, also in full (no ``[n]`` of the answer leads to their
    URLs); then the others it read, folded into one line by site (their titles are noise
    when the answer does not rest on them). An answer that cites none lists them all, to
    judge it by. Numbers stay those of the answer."""
    if not sources:
        return ["No sources."]
    used, read = cited_first(sources, cited)
    if not used:
        return ["Sources (read; the answer cites none):", *map(_source_line, read)]
    lines = ["Sources:", *map(_source_line, used)]
    backing = [source for source in read if source.number in found]
    if backing:
        lines += ["Not cited, but backing a sentence (found by the check):"]
        lines += map(_source_line, backing)
        read = [source for source in read if source.number not in found]
    if read:
        sites = ", ".join(f"[{s.number}] {terminal_safe(s.where)}" for s in read)
        lines.append(f"Also read, not cited ({len(read)}): {sites}")
    return lines


def _source_line(source: Source) -> str:
    title = one_line(source.title) or "Untitled"
    date = f" ({source.date})" if source.date else ""
    return f"[{source.number}] {title} - {safe_url(source.url)}{date}"
