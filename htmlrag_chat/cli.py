# PYTHON_ARGCOMPLETE_OK (argcomplete's global completion looks for this marker)
"""The ``htmlrag-chat`` command line: the chat app with no command, else one command.

Every failure a user can cause is one line on stderr and a documented exit code
(``base/errors.py``, listed in ``--help``); only ``HTMLRAG_CHAT_DEBUG=1`` shows tracebacks.
Results go to stdout, progress and notices to stderr, so output can be piped. Our own
output has no colour; what colours (argparse's help from Python 3.14, the chat app through
Textual) honours ``NO_COLOR`` itself. Shell completion for bash and zsh comes from
argcomplete, which runs this parser: ``eval "$(htmlrag-chat completion bash)"``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from htmlrag_chat import __version__
from htmlrag_chat.base.errors import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, UserError
from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.commands import (
    ask,
    cache,
    chat,
    completion,
    config,
    history,
    html,
    mcp,
    models,
    research,
    serve,
    web,
)
from htmlrag_chat.commands import eval as evaluation  # `eval` would shadow the builtin
from htmlrag_chat.commands.common import (
    EPILOG,
    PROG,
    HelpFormatter,
    Parser,
    error,
    examples_text,
    replay_hint,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options
from htmlrag_chat.commands.typed import with_ask


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions: answer, then exit
        import argcomplete

        argcomplete.autocomplete(parser)
    words = sys.argv[1:] if argv is None else list(argv)
    refusal = not_utf8(words) or replay_hint(words)
    if refusal is not None:  # argparse would take the file for a command or a question
        error(refusal)
        return EXIT_USAGE
    args = parser.parse_args(with_ask(parser, words))
    quiet_library_warnings(verbose=getattr(args, "verbose", False))
    try:
        return int(args.handler(args))
    except UserError as failure:
        error(str(failure))
        raw = getattr(failure, "raw", "")  # what the line left out (an engine's own dump)
        if raw and getattr(args, "verbose", False):
            error(f"detail: {raw}")
        return failure.exit_code
    except KeyboardInterrupt:
        error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours. Python
        # flushes stdout once more at exit and reports that failure on stderr ("Exception
        # ignored ... BrokenPipeError"); closing stderr keeps that line off the terminal.
        sys.stderr.close()
        return EXIT_OK
    except Exception as failure:
        if os.environ.get("HTMLRAG_CHAT_DEBUG"):
            raise
        error(
            f"internal error: {type(failure).__name__}: {failure} (HTMLRAG_CHAT_DEBUG=1 shows more)"
        )
        return EXIT_INTERNAL


def not_utf8(words: Sequence[str]) -> str | None:
    """Why an argument cannot be used when one is not UTF-8 text. Python hands bytes that
    are not UTF-8 over as lone surrogates (``caf\\xe9`` as ``caf\\udce9``), which nothing
    can print, store or send: refused before any work, showing the bytes as escapes."""
    for word in words:
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raw = word.encode("utf-8", "surrogateescape" if _escaped(word) else "replace")
            shown = terminal_safe(raw.decode("utf-8", "backslashreplace"))
            return (
                f"argument '{shown}' is not UTF-8 text (the terminal or the locale sends "
                "another encoding)"
            )
    return None


def _escaped(word: str) -> bool:
    """Whether every surrogate in ``word`` is one Python's decoding made of a byte."""
    return all("\udc80" <= c <= "\udcff" for c in word if "\ud800" <= c <= "\udfff")


def quiet_library_warnings(verbose: bool) -> None:
    """Deprecation notices of the libraries under us (transformers, torch, ...) name code
    the user did not write and cannot change: off unless ``-v`` asks to see everything.
    Those of the package itself stay (none is raised today)."""
    if verbose:
        return
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category, module=r"(?!htmlrag_chat\b)")


EXAMPLES = (
    ("htmlrag-chat", "open the chat app (also: htmlrag-chat chat)"),
    ('htmlrag-chat ask "Who designed the Eiffel tower?"', "one answer, with cited sources"),
    ('htmlrag-chat "Who designed the Eiffel tower?"', "the same: a question is asked"),
    ("htmlrag-chat COMMAND --help", "what a command does, its options and examples"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog=PROG,
        description="Local web-search answers from pruned HTML (HtmlRAG). With no command: "
        "the chat app, which takes the options below.",
        epilog=f"{examples_text(EXAMPLES)}\n\n{EPILOG}",
        formatter_class=HelpFormatter,
        parents=[store_options(refresh=True)],
    )
    add_setting_options(parser, "chat")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    parser.set_defaults(handler=chat.run_chat)
    commands = parser.add_subparsers(
        title="commands (none: open the chat app)", required=False, metavar="COMMAND"
    )
    for module in (
        ask, research, chat, history, config, models, web, cache, html, evaluation, mcp,
        serve, completion,
    ):  # fmt: skip
        module.add_commands(commands)
    return parser
