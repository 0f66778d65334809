"""The ``htmlrag-chat`` command line: the chat app with no command, else one command.

Every failure a user can cause is one line on stderr and a documented exit code
(``errors.py``, listed in ``--help``); only ``HTMLRAG_CHAT_DEBUG=1`` shows tracebacks.
Results go to stdout, progress and notices to stderr, so output can be piped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from htmlrag_chat import __version__
from htmlrag_chat.commands import ask, cache, chat, html, web
from htmlrag_chat.commands import eval as evaluation  # `eval` would shadow the builtin
from htmlrag_chat.commands.common import EPILOG, PROG, error, store_options
from htmlrag_chat.errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, UserError


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except UserError as failure:
        error(str(failure))
        return failure.exit_code
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except Exception as failure:
        if os.environ.get("HTMLRAG_CHAT_DEBUG"):
            raise
        error(
            f"internal error: {type(failure).__name__}: {failure} (HTMLRAG_CHAT_DEBUG=1 shows more)"
        )
        return EXIT_INTERNAL


class _Parser(argparse.ArgumentParser):
    """argparse with its errors on one line, like every other error of the command line
    (argparse prints the whole usage first, which buries the message)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Local web-search answers from pruned HTML (HtmlRAG).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[store_options(), ask.reader_options()],
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(handler=chat.run_chat)
    commands = parser.add_subparsers(
        title="commands (none: open the chat app)", required=False, metavar="COMMAND"
    )
    for module in (ask, html, web, cache, evaluation):
        module.add_commands(commands)
    return parser
