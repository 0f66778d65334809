"""``mcp``: serve web context and answers to agents over the Model Context Protocol.

Stdio is the default (what Claude Code, Cursor and other agents launch); ``--http`` serves
streamable HTTP on 127.0.0.1, to requests with the bearer token (``mcp/auth.py``). The
global options apply as they do to ``ask``: the cache or the replayed recording, the reader,
the pruner, the budget and the search settings. Models load once, in a thread from the
start, so that ``initialize`` is answered at once and each tool call waits for them; a
replay keeps its conversations in a scratch file for the life of the server, as the chat
app does.
"""

from __future__ import annotations

import argparse

from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.commands.common import (
    add_command,
    history_store,
    open_store,
    progress_printer,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options, agent_options, settings_of

DEFAULT_PORT = 8765


def add_commands(commands: argparse._SubParsersAction) -> None:
    mcp = add_command(
        commands, "mcp", "serve web context and answers to agents (MCP over stdio, or --http)",
        run_mcp, [store_options(argparse.SUPPRESS, refresh=True)],
        [("htmlrag-chat mcp", "stdio, as agents launch it"),
         ("htmlrag-chat --replay-db demo.sqlite3 mcp", "offline, from a recording"),
         ("htmlrag-chat mcp --http --port 8765",
          "streamable HTTP on 127.0.0.1:8765/mcp, with the bearer token it prints")],
    )  # fmt: skip
    add_setting_options(mcp, "mcp")
    mcp.add_argument(
        "--http", action="store_true",
        help="serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio, to "
        "requests with Authorization: Bearer <token> (mcp_token, else a new one, printed)",
    )  # fmt: skip
    mcp.add_argument(
        "--port", type=port_number, default=None,
        help=f"the --http port (default {DEFAULT_PORT}; 0: any free port, said on stderr)",
    )  # fmt: skip


def port_number(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"not a port number (0-65535): {text}")
    return int(text)


def run_mcp(args: argparse.Namespace) -> int:
    if args.port is not None and not args.http:
        raise UserError("--port needs --http (stdio is the default transport)")
    settings = settings_of(args)
    options = agent_options(args, settings)
    from htmlrag_chat.assembly.wiring import build_parts
    from htmlrag_chat.mcp.auth import McpSettings
    from htmlrag_chat.mcp.server import bind_loopback, build_server, log, serve_http, serve_stdio
    from htmlrag_chat.mcp.service import ContextService, Loading, shared

    port = DEFAULT_PORT if args.port is None else args.port
    listening = bind_loopback(port) if args.http else None
    with open_store(args) as cache, history_store(args, cache) as (history, _):
        # Stdout is the protocol: notices and progress of the loading go to stderr. The
        # models load while the client connects; the tools wait for them.
        loading = Loading(
            lambda: shared(build_parts(options, cache, progress_printer(False))),
            lambda error: log(f"the tools cannot answer: {error}"),
        )
        server = build_server(ContextService(loading, cache, history))
        if listening is not None:
            serve_http(server, listening, *McpSettings(**settings.section("mcp")).token())
        else:
            serve_stdio(server)
    return EXIT_OK
