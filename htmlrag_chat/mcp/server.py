"""The MCP protocol side: tools, resources, progress and the two transports.

Built on the official ``mcp`` SDK's ``MCPServer`` (docs/mcp.md says why not ``fastmcp``).
Each tool publishes an input schema (from its annotated parameters), an output schema (the
pydantic model in ``results.py``) and a description written for the model that calls it;
its result carries both the structured record and a text rendering with each source
between its delimiters. The pipeline's events become ``notifications/progress`` while a
call runs. A client's ``notifications/cancelled`` cancels the call's task: the agent stops
its worker thread at its next check and closes the reader's stream, as Esc does in the app.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer, ResourceSecurity
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from htmlrag_chat import __version__
from htmlrag_chat.base.errors import InputError, UserError
from htmlrag_chat.base.events import Event, EventSink, ReaderBusy, SourcesReady
from htmlrag_chat.base.progress import event_line
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.base.safety import json_safe, one_line, safe_url
from htmlrag_chat.conversations.export import conversation_markdown
from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.mcp.auth import BearerAuth
from htmlrag_chat.mcp.results import AnswerResult, ResearchResult, WebContext
from htmlrag_chat.mcp.service import CONTEXT_BUDGET, CONTEXT_PAGES, ContextService
from htmlrag_chat.mcp.untrusted import Fence
from htmlrag_chat.pruning.pipeline import PageInput, clean_page
from htmlrag_chat.settings.kinds import Integer
from htmlrag_chat.settings.tree import find
from htmlrag_chat.web.results import Outcome

T = TypeVar("T")
URI = "htmlrag-chat://"
HOST = "127.0.0.1"  # the HTTP transport listens on loopback only

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True)


def build_server(service: ContextService) -> MCPServer:
    server: MCPServer = MCPServer(
        "htmlrag-chat", instructions=_text("mcp_instructions"), version=__version__,
        log_level="WARNING",
    )  # fmt: skip

    @server.tool(description=_text("mcp_web_context"), annotations=READ_ONLY)
    async def web_context(
        query: Annotated[str, Field(description="What to search the web for.")],
        ctx: Context,
        budget_tokens: Annotated[int, declared("prune.budget")] = CONTEXT_BUDGET,
        pages: Annotated[int, declared("research.pages")] = CONTEXT_PAGES,
        site: Annotated[str | None, declared("search.site")] = None,
        format: Annotated[
            Literal["html", "markdown", "text"] | None,
            Field(description="How contents are written (default: the server's --render)."),
        ] = None,
    ) -> Annotated[CallToolResult, WebContext]:
        result = await _relayed(
            ctx,
            lambda emit: service.web_context(query, emit, budget_tokens, pages, site, format),
        )
        return _result(result, context_text(result))

    @server.tool(description=_text("mcp_page_context"), annotations=READ_ONLY)
    async def page_context(
        url: Annotated[str, Field(description="The page's http(s) address.")],
        query: Annotated[str, Field(description="What to keep from the page.")],
        ctx: Context,
        budget_tokens: Annotated[int, declared("prune.budget")] = CONTEXT_BUDGET,
    ) -> Annotated[CallToolResult, WebContext]:
        result = await _relayed(
            ctx, lambda emit: service.page_context(url, query, emit, budget_tokens)
        )
        return _result(result, context_text(result))

    @server.tool(description=_text("mcp_answer"), annotations=ToolAnnotations(open_world_hint=True))
    async def answer(
        question: Annotated[str, Field(description="The question, in any language.")],
        ctx: Context,
        conversation_id: Annotated[
            int | None, Field(description="A conversation_id from an earlier answer.")
        ] = None,
    ) -> Annotated[CallToolResult, AnswerResult]:
        result = await _relayed(ctx, lambda emit: service.answer(question, emit, conversation_id))
        return _result(result, answer_text(result))

    @server.tool(
        description=_text("mcp_research"), annotations=ToolAnnotations(open_world_hint=True)
    )
    async def research(
        question: Annotated[str, Field(description="The question, in any language.")],
        ctx: Context,
        parts: Annotated[
            list[str] | None,
            Field(description="The questions to research, in place of the reader's split."),
        ] = None,
    ) -> Annotated[CallToolResult, ResearchResult]:
        result = await _relayed(ctx, lambda emit: service.research(question, emit, parts or ()))
        return _result(result, research_text(result))

    @server.resource(
        f"{URI}conversations", mime_type="application/json",
        description="The stored conversations (id, title, times), most recent first.",
    )  # fmt: skip
    async def conversations() -> str:
        return json.dumps(json_safe(service.history.conversations()), ensure_ascii=False)

    @server.resource(
        URI + "conversations/{conversation_id}", mime_type="text/markdown",
        description="One conversation: each question, its answer and the answer's sources.",
    )  # fmt: skip
    async def conversation(conversation_id: str) -> str:
        # ASCII digits only: "²" and "١٢" are digits to str.isdigit, not to int().
        number = conversation_id.isascii() and conversation_id.isdigit()
        found = service.history.conversation(int(conversation_id)) if number else None
        if found is None:
            raise ResourceNotFoundError(f"no conversation {conversation_id}")
        return conversation_markdown(found["title"], service.history.messages(found["id"]))

    @server.resource(
        URI + "pages/{+url}", mime_type="text/plain",
        description="A page in the cache, by its URL, cleaned (not pruned): untrusted web data.",
        security=ResourceSecurity(exempt_params={"url"}),
    )  # fmt: skip
    async def page(url: str) -> str:
        return cached_page_text(service, url)

    return server


def declared(key: str) -> Any:
    """A tool parameter as the settings tree declares the setting it stands for: its help
    as the description, its kind's bounds as the schema's, so that the tools, the command
    line and the config file take the same values (``budget_tokens`` is ``--budget``)."""
    setting = find(key)
    kind = setting.kind
    least, most = (kind.least, kind.most) if isinstance(kind, Integer) else (None, None)
    return Field(description=setting.help, ge=least, le=most)  # None: no such bound


def _text(prompt: str) -> str:
    """A description for the model that calls the tools (``prompts/mcp_*.md``), one
    paragraph per blank-line-separated block."""
    return "\n\n".join(" ".join(part.split()) for part in load_prompt(prompt).split("\n\n"))


def cached_page_text(service: ContextService, url: str) -> str:
    """A cached page, cleaned (query-independent, so nothing is lost), delimited."""
    found = service.cache.get_page(url)
    if found is None or found.outcome is not Outcome.OK:
        raise ResourceNotFoundError(f"no page in the cache for {safe_url(url)}")
    try:
        page, html = clean_page(PageInput(url, found.body or b"", found.charset))
    except InputError as error:
        raise ResourceError(f"the cached page cannot be read: {one_line(str(error))}") from None
    header = f"{one_line(page.title) or 'Untitled'}\nURL: {safe_url(url)}\n"
    return header + Fence().wrap(1, serialize(html))


def _result(record: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=record.model_dump(mode="json"),
    )


def context_text(result: WebContext) -> str:
    """The result as a model reads it: a summary line, the note, each source delimited."""
    exact = "" if result.exact else " (approximate count)"
    lines = [
        f'Web context for "{result.query}": {len(result.sources)} source(s), '
        f"{result.total_tokens} of {result.budget_tokens} tokens{exact}.",
        result.note,
    ]
    for source in result.sources:
        lines += ["", f"[{source.number}] {source.title or 'Untitled'}", f"URL: {source.url}"]
        if source.date:
            lines.append(f"Date: {source.date}")
        lines.append(source.content)
    if result.left_out:
        lines += ["", "Left out:"]
        lines += [f"- {page.url}: {page.reason}" for page in result.left_out]
    lines += [f"Note: {notice}" for notice in result.notices]
    return "\n".join(lines)


def answer_text(result: AnswerResult) -> str:
    lines = [result.answer, "", "Sources:"]
    lines += [f"[{s.number}] {s.title or 'Untitled'} - {s.url}" for s in result.sources]
    lines += [f"! {flag}" for flag in result.unsupported]
    lines += ["", f"conversation_id: {result.conversation_id}"]
    return "\n".join(lines)


def research_text(result: ResearchResult) -> str:
    """The report as a model reads it: the report, the references, what was flagged."""
    lines = [result.report, "", "References:"]
    lines += [f"[{r.number}] {r.title or 'Untitled'} - {r.url}" for r in result.references]
    lines += [f"! {flag}" for flag in result.flags]
    lines += ["", f"conversation_id: {result.conversation_id}"]
    return "\n".join(lines)


async def _relayed(ctx: Context, work: Callable[[EventSink], Awaitable[T]]) -> T:
    """Run ``work`` with an event sink whose events reach the client as progress
    notifications, in order, all sent before the result. A user error (a bad argument, a
    search that failed) is the tool's error message; anything else is logged by the SDK."""
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    sent = 0

    def emit(event: Event) -> None:
        line = progress_line(event)
        if line is not None:
            lines.put_nowait(line)

    async def pump() -> None:
        nonlocal sent
        while (line := await lines.get()) is not None:
            sent += 1
            try:
                await ctx.report_progress(sent, None, line)
            except Exception:  # a client gone or a closed stream: the work goes on
                return

    relay = asyncio.create_task(pump())
    try:
        result = await work(emit)
    except UserError as error:
        relay.cancel()
        raise ToolError(str(error)) from None
    except asyncio.CancelledError:
        relay.cancel()
        log(f"{ctx.request_id}: cancelled, its work stopped")  # the agent waited for it
        raise
    except BaseException:
        relay.cancel()
        raise
    lines.put_nowait(None)
    await relay
    return result


def progress_line(event: Event) -> str | None:
    """An event as a progress message, in ``base/progress.py``'s words on one line: each stage's
    start and end, fetch progress, search rounds, skipped items and notices. Not the
    answer's text nor the sources, which the result carries, nor the reader's state."""
    if isinstance(event, SourcesReady | ReaderBusy):
        return None
    line = event_line(event)
    return None if line is None else one_line(line)


def log(message: str) -> None:
    """A line for the server's log: stderr, which stdio clients keep (stdout is the protocol)."""
    print(f"htmlrag-chat mcp: {message}", file=sys.stderr, flush=True)


def serve_stdio(server: MCPServer) -> None:
    """Serve one client on stdin and stdout until it closes them."""
    import anyio

    anyio.run(server.run_stdio_async)


def bind_loopback(port: int) -> socket.socket:
    """A socket bound to ``127.0.0.1:PORT`` (0: a free port), before any model loads, so
    that a port in use is one line at once. Loopback only: nothing binds another address."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listening.bind((HOST, port))
        listening.listen()  # clients that connect before the loop runs wait in the backlog
    except OSError as error:
        listening.close()
        raise UserError(f"cannot listen on {HOST}:{port}: {error.strerror or error}") from None
    return listening


def serve_http(
    server: MCPServer, listening: socket.socket, token: str, generated: bool = False
) -> None:
    """Serve streamable HTTP at ``http://127.0.0.1:PORT/mcp`` on ``listening`` (from
    ``bind_loopback``), to requests that carry ``token`` (``auth.BearerAuth``), saying
    where on stderr, and the token when it was ``generated`` for this run."""
    import anyio

    from htmlrag_chat.mcp.connections import serve

    app = BearerAuth(server.streamable_http_app(host=HOST), token)
    if generated:
        log(f"token: {token} (send it as Authorization: Bearer; set mcp_token to keep one)")
    log(f"listening on http://{HOST}:{listening.getsockname()[1]}/mcp")
    anyio.run(partial(serve, app, listening, log))
