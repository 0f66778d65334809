"""``research``: a question taken apart, each part searched and answered with checked
citations, then one report (``research/``).

The question is the argument, or stdin as for ``ask``; ``--part`` gives the parts instead of
the reader's split (the extractive reader cannot split). Progress goes to stderr as ``ask``'s
does (``commands/output.py``): the parts when they are planned, a line as each one ends, and
the status line of the running part with the time left. The report goes to stdout at the
end (``--json``: one object), and with ``--markdown FILE`` / ``--html FILE`` into files too
(an existing one only with ``--force``, checked before any work). Ctrl+C stops it: the parts
done are printed, kept in the history and in the cache (the same research again resumes
from them), and the exit code is 130. The report is kept in the history as a conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.atomic import check_replaceable, output_file
from htmlrag_chat.base.errors import EXIT_OK
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.base.safety import one_line, text_safe
from htmlrag_chat.commands.ask import (
    LATE_PAGE_GRACE,
    output_options,
    read_question,
    source_lines,
)
from htmlrag_chat.commands.common import (
    add_command,
    error,
    store_options,
    user_path,
)
from htmlrag_chat.commands.options import add_setting_options, agent_options
from htmlrag_chat.commands.output import AskOutput, choose_form, conversation_store

if TYPE_CHECKING:
    from htmlrag_chat.assembly.wiring import AgentOptions
    from htmlrag_chat.conversations.session import ChatSession
    from htmlrag_chat.research.report import Report
    from htmlrag_chat.store.db import Store

EXIT_STOPPED = 130  # as for any command stopped with Ctrl+C

EXAMPLES = (
    ('htmlrag-chat research "Who designed the Eiffel tower, and when did it open?"',
     "a report in parts, each cited"),
    ('htmlrag-chat research "QUESTION" --docs ~/notes --no-web --html report.html',
     "from your own files, also as one HTML file"),
    ('htmlrag-chat research "QUESTION" --reader extractive --part "PART 1" --part "PART 2"',
     "the parts given (the extractive reader cannot split a question)"),
)  # fmt: skip


def add_commands(commands: argparse._SubParsersAction) -> None:
    research = add_command(
        commands, "research",
        "research a question in parts, each searched and answered with checked citations: "
        "one report", run_research, [store_options(argparse.SUPPRESS, refresh=True)], EXAMPLES,
    )  # fmt: skip
    add_setting_options(research, "research")
    research.add_argument(
        "question", nargs="?", metavar="QUESTION",
        help="the question; '-' or none (with stdin not a terminal) reads it from stdin",
    )  # fmt: skip
    research.add_argument(
        "--part", action="append", default=[], metavar="QUESTION",
        help="a part to research, in place of the reader's split (repeatable, at most "
        "--max-parts)",
    )  # fmt: skip
    research.add_argument("--json", action="store_true", help="print the report as one JSON object")
    research.add_argument(
        "--markdown", type=user_path, metavar="FILE", help="also write the report as Markdown"
    )
    research.add_argument(
        "--html", type=user_path, metavar="FILE",
        help="also write the report as one self-contained HTML file",
    )  # fmt: skip
    research.add_argument(
        "--force", action="store_true", help="write over an existing --markdown or --html file"
    )
    output_options(research, stream=False)


def run_research(args: argparse.Namespace) -> int:
    from htmlrag_chat.research.parts import given_parts
    from htmlrag_chat.research.progress import ResearchStatus

    question = read_question(args.question, "research")
    options = agent_options(args)  # a bad setting from any source stops here, before any work
    parts = given_parts(args.part, options.max_parts)
    for path in (args.markdown, args.html):
        if path is not None:
            check_replaceable(path, args.force)
    form = choose_form(
        quiet=args.quiet, verbose=args.verbose, progress=args.progress,
        terminal=sys.stderr.isatty(),
    )  # fmt: skip
    not_kept = "this report is not kept in the history"
    with (
        AskOutput(form, answer=False, status=ResearchStatus()) as output,
        conversation_store(args, output, not_kept) as (store, session),
    ):
        report, stopped = asyncio.run(_research(options, store, session, question, parts, output))
        output.finish()
    _write_files(report, args, store.path)
    if args.json:
        print(json.dumps(report.to_json(), ensure_ascii=False, indent=2))
    else:
        quotes = args.quotes if args.quotes is not None else sys.stdout.isatty()
        print_report(report, quiet=args.quiet, quotes=quotes)
    if stopped:
        done = sum(section.state == "answered" for section in report.sections)
        error(
            f"stopped: {done} of {len(report.sections)} parts answered, kept in the history "
            "and the cache (the same research again resumes from them)"
        )
        return EXIT_STOPPED
    return EXIT_OK


async def _research(
    options: AgentOptions,
    store: Store,
    session: ChatSession,
    question: str,
    parts: tuple[str, ...],
    emit: EventSink,
) -> tuple[Report, bool]:
    """Build the agent, save the question, research it, save the report (a stopped one
    too, with what was done); a research that fails stays in the history without an
    answer, as a failed ``ask`` does, its parts done kept in the cache. Whether it was
    stopped."""
    from htmlrag_chat.assembly.wiring import build_agent
    from htmlrag_chat.research.kept import ResearchCache
    from htmlrag_chat.research.runner import Researcher

    agent = build_agent(options, store, emit)
    cache = ResearchCache(store, lambda text: emit(Notice(text)), options.refresh)
    researcher = Researcher(agent, cache, options.max_parts)
    message_id = session.question_asked(question)
    stopped = False
    try:
        report = await researcher.run(question, parts)
    except asyncio.CancelledError:  # Ctrl+C: what is done is the report
        report, stopped = researcher.report(), True
    finally:
        cache.close()
        await agent.settle(LATE_PAGE_GRACE)
    session.answered(message_id, report.as_answer())
    return report, stopped


def _write_files(report: Report, args: argparse.Namespace, cache: Path) -> None:
    """``--markdown`` and ``--html``, never over the cache file."""
    from htmlrag_chat.research.export import report_markdown
    from htmlrag_chat.research.page import report_html

    for path, write in ((args.markdown, report_markdown), (args.html, report_html)):
        if path is not None:
            with output_file(path, [cache], force=args.force) as file:
                file.write(write(report).encode("utf-8"))


def print_report(report: Report, quiet: bool = False, quotes: bool = False) -> None:
    """The report on stdout: the short answer, each part with (``quotes``) the words that
    back its sentences, what the check corrected and flagged (unless ``quiet``), then the
    references, numbered once for the whole report."""
    from htmlrag_chat.evidence.correction import MARK
    from htmlrag_chat.evidence.words import correction_lines, evidence_lines, flag_lines
    from htmlrag_chat.research.report import section_text

    lines: list[str] = []
    if not report.single:
        lines += [f"Short answer: {text_safe(' '.join(report.short_answer()))}", ""]
    for section in report.sections:
        if not report.single:
            lines.append(f"{section.number}. {one_line(section.part)}")
        lines.append(text_safe(section_text(section, markdown=False)))
        evidence = evidence_lines(section.claims) if quotes else []
        if evidence:
            lines += ["Evidence:", *map(text_safe, evidence)]
        if not quiet:
            lines += [f"{MARK} {text_safe(line)}" for line in correction_lines(section.claims)]
            lines += [f"! {text_safe(flag)}" for flag in flag_lines(section.claims)]
        lines.append("")
    lines += source_lines(report.references, report.cited_numbers, report.found_numbers)
    print("\n".join(lines))
