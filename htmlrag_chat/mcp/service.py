"""The work behind each tool, on parts loaded once and shared by every call.

Calls run at once on one event loop: each gets its own agent (``wiring.Parts.agent``: its
own progress sink, budget and page count) over the one reader, token counter and scorers,
and the one cache file. The store is used from the loop's thread only, each write one short
transaction (WAL), and the CPU work of several calls takes turns on the scorers
(``OneAtATime``): the generative scorer keeps a KV cache between forward passes, and two
cores gain nothing from two at once.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from htmlrag_chat.agent.research import Research
from htmlrag_chat.base import cancel
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.rendering import RENDERINGS, render
from htmlrag_chat.mcp.results import (
    AnswerResult,
    ContextSource,
    LeftOut,
    ResearchResult,
    WebContext,
)
from htmlrag_chat.mcp.untrusted import Fence
from htmlrag_chat.scoring import BlockScorer
from htmlrag_chat.settings.tree import find
from htmlrag_chat.web.guard import Refused, check_url

if TYPE_CHECKING:
    from htmlrag_chat.assembly.wiring import Parts
    from htmlrag_chat.store.db import Store

FORMATS = RENDERINGS  # how contents are written: html, markdown or text
# What a call gets when it names no budget or page count: an agent's context is shared with
# its own work, so less than ``ask`` reads (``--budget``, ``--pages`` go to ``answer``).
CONTEXT_BUDGET, CONTEXT_PAGES = 2048, 5
# The tools' limits are those of the settings: one declaration (``settings/tree.py``).
BUDGET, PAGES = find("prune.budget"), find("research.pages")
# Tokens per source kept free beside its delimiter lines: BPE may merge a token across the
# boundary between a line and the content, and pages counted apart may differ by a token.
BOUNDARY_TOKENS = 4
OVER_BUDGET = "over the token budget"


@dataclass
class OneAtATime:
    """A scorer shared by concurrent calls, scoring for one of them at a time. A call
    waiting its turn still stops when it is cancelled (``cancel.check`` while it waits)."""

    scorer: BlockScorer
    lock: threading.Lock

    @property
    def name(self) -> str:
        return self.scorer.name

    def score(self, query: str, tree: BlockTree) -> list[float]:
        while not self.lock.acquire(timeout=0.05):
            cancel.check()
        try:
            return self.scorer.score(query, tree)
        finally:
            self.lock.release()

    def __getattr__(self, name: str) -> object:  # last_stats, context_limit, ...
        return getattr(self.scorer, name)


def shared(parts: Parts) -> Parts:
    """``parts`` with every scorer taking turns under one lock."""
    lock = threading.Lock()
    recipe = parts.recipe
    second = OneAtATime(recipe.second, lock) if recipe.second is not None else None
    first = OneAtATime(recipe.first, lock)
    return replace(parts, recipe=replace(recipe, first=first, second=second))


class Loading:
    """The parts, built in a thread from the server's start (``build``), so that the
    client's ``initialize`` is answered at once: the models took 11.7 s to load on a loaded
    machine, and a client gives up on a server that does not answer. Each tool call waits
    for them; a failure to build them is every call's error, and ``failed`` is told once."""

    def __init__(self, build: Callable[[], Parts], failed: Callable[[BaseException], None]) -> None:
        self._future: Future[Parts] = Future()
        self._failed = failed
        threading.Thread(target=self._run, args=(build,), name="mcp-load", daemon=True).start()

    @classmethod
    def done(cls, parts: Parts) -> Loading:
        """Parts already loaded (tests, benchmarks)."""
        return cls(lambda: parts, lambda error: None)

    def _run(self, build: Callable[[], Parts]) -> None:
        try:
            self._future.set_result(build())
        except BaseException as error:  # the calls re-raise it, in their own words
            self._future.set_exception(error)
            self._failed(error)

    async def parts(self) -> Parts:
        """The parts, once built (a call cancelled while it waits leaves the loading on)."""
        return await asyncio.shield(asyncio.wrap_future(self._future))

    def loaded(self) -> Parts:
        """The parts, when ``parts`` has been awaited."""
        return self._future.result(timeout=0)


@dataclass
class ContextService:
    loading: Loading
    cache: Store  # the web cache (read-only in a replay)
    history: Store  # where conversations are kept (a scratch file in a replay)

    @property
    def parts(self) -> Parts:
        """The loaded parts: each call awaits ``loading`` first."""
        return self.loading.loaded()

    # -- web_context and page_context

    async def web_context(
        self,
        query: str,
        emit: EventSink,
        budget_tokens: int = CONTEXT_BUDGET,
        pages: int = CONTEXT_PAGES,
        site: str | None = None,
        format: str | None = None,
    ) -> WebContext:
        """``format`` None: the server's ``--render``; the budget counts contents as written."""
        query = _checked_query(query)
        await self.loading.parts()
        parts = self.parts if site is None else _on_sites(self.parts, site)
        format = format or self.parts.prune.render
        _check_limits(budget_tokens, pages, format)
        fence = Fence()
        room = self._room(fence, budget_tokens, pages)
        agent = parts.agent(self.cache, emit, budget=room, pages=pages, rendering=format)
        research = await agent.search_context(query)
        return self._package(query, budget_tokens, format, research, fence)

    async def page_context(
        self, url: str, query: str, emit: EventSink, budget_tokens: int = CONTEXT_BUDGET
    ) -> WebContext:
        query = _checked_query(query)
        _check_limits(budget_tokens, 1, "html")
        await self.loading.parts()
        if not self.parts.options.web:
            raise UserError("this server was started with --no-web: it fetches no page")
        try:
            check_url(url)
        except Refused as refused:
            raise UserError(f"will not fetch {safe_url(url)}: {refused}") from None
        fence = Fence()
        room = self._room(fence, budget_tokens, 1)
        agent = self.parts.agent(self.cache, emit, budget=room, rendering="html")
        research = await agent.page_context(url, query)
        return self._package(query, budget_tokens, "html", research, fence)

    def _room(self, fence: Fence, budget: int, pages: int) -> int:
        """The budget the pages are pruned to, once: ``budget`` less the delimiter lines of
        every page that may become a source (counted with this result's tag), but never
        under half of it (a small budget then keeps fewer sources, see ``_package``)."""
        counter = self.parts.counter
        lines = counter.count_many([fence.wrap(number, "") for number in range(1, pages + 1)])
        return max(budget - sum(lines) - BOUNDARY_TOKENS * pages, budget // 2, 1)

    def _package(
        self, query: str, budget: int, format: str, research: Research, fence: Fence
    ) -> WebContext:
        """The sources as handed over, each delimited and counted; when they are still over
        the budget (a very small one, or Markdown longer than its HTML), the last ones are
        left out, so the total is never over."""
        counter = self.parts.counter
        sources = research.sources
        contents = [fence.wrap(s.number, render(s.html, format)) for s in sources]
        tokens = counter.count_many(contents)
        left_out = [
            LeftOut(url=safe_url(d.what), reason=one_line(d.reason)) for d in research.left_out
        ]
        while sources and sum(tokens) > budget:
            left_out.append(LeftOut(url=safe_url(sources[-1].url), reason=OVER_BUDGET))
            sources, contents, tokens = sources[:-1], contents[:-1], tokens[:-1]
        notices = [f"skipped: {dropped.reason}" for dropped in research.skipped]
        return WebContext(
            query=one_line(query),
            budget_tokens=budget,
            total_tokens=sum(tokens),
            tokenizer=counter.name,
            exact=counter.exact,
            format=format,
            sources=[
                ContextSource(
                    number=source.number,
                    title=one_line(source.title),
                    url=safe_url(source.url),
                    local=source.local,
                    date=self._date(source.url),
                    tokens=count,
                    content=content,
                )
                for source, content, count in zip(sources, contents, tokens, strict=True)
            ],
            left_out=left_out,
            notices=[one_line(notice) for notice in dict.fromkeys(notices + research.notes)],
        )

    def _date(self, url: str) -> str | None:
        page = self.cache.get_page(url)
        date = page.headers.get("last-modified") if page is not None else None
        return one_line(date) if date else None

    # -- answer

    async def answer(
        self, question: str, emit: EventSink, conversation_id: int | None = None
    ) -> AnswerResult:
        """The whole pipeline, the exchange saved like every ``ask`` (``ChatSession``)."""
        question = _checked_query(question, "question")
        await self.loading.parts()
        session = ChatSession(self.history)
        if conversation_id is not None:
            if self.history.conversation(conversation_id) is None:
                raise UserError(f"no conversation {conversation_id}")
            session.open(conversation_id)
        agent = self.parts.agent(self.cache, emit)
        message_id = session.question_asked(question)
        answer = await agent.ask(question, list(session.turns))
        session.answered(message_id, answer)
        record = answer.to_json()  # every string from the web made safe (json_safe)
        return AnswerResult.model_validate(
            {
                **record,
                "question": one_line(question),
                "conversation_id": session.conversation,
                "unsupported": record["flags"],
            }
        )

    # -- research

    async def research(
        self, question: str, emit: EventSink, parts: Sequence[str] = ()
    ) -> ResearchResult:
        """A research (``research/``), its parts kept in the cache as they are answered
        and its report in the history, like every ``research``."""
        from htmlrag_chat.research.kept import ResearchCache
        from htmlrag_chat.research.parts import given_parts
        from htmlrag_chat.research.runner import Researcher

        question = _checked_query(question, "question")
        await self.loading.parts()
        given = given_parts(parts, self.parts.options.max_parts)
        session = ChatSession(self.history)
        agent = self.parts.agent(self.cache, emit)
        cache = ResearchCache(
            self.cache, lambda text: emit(Notice(text)), self.parts.options.refresh
        )
        researcher = Researcher(agent, cache, self.parts.options.max_parts)
        message_id = session.question_asked(question)
        try:
            report = await researcher.run(question, given)
        finally:
            cache.close()
        session.answered(message_id, report.as_answer())
        record = report.to_json()  # every string from the web made safe (json_safe)
        return ResearchResult.model_validate(
            {**record, "question": one_line(question), "conversation_id": session.conversation}
        )


def _checked_query(text: str, what: str = "query") -> str:
    text = " ".join(text.split())
    if not text:
        raise UserError(f"the {what} is empty")
    return text


def _on_sites(parts: Parts, site: str) -> Parts:
    """``parts`` searching as ``--site SITE`` does: ``site`` read by the option's own kind
    (the same parsing and refusals), the sites then kept to by every result and download,
    as the search settings carry them; ``--exclude-site`` still holds."""
    try:
        sites = find("search.site").kind.parse(site)
    except ValueError:
        raise UserError(f"site must be a domain such as docs.python.org, not {site!r}") from None
    assert isinstance(sites, tuple)  # the kind of a repeatable option parses to a tuple
    search = replace(parts.options.search, site=sites)
    return replace(parts, options=replace(parts.options, search=search))


def _check_limits(budget: int, pages: int, format: str) -> None:
    """The arguments checked as ``--budget`` and ``--pages`` are (their kinds' bounds)."""
    for name, setting, value in (("budget_tokens", BUDGET, budget), ("pages", PAGES, pages)):
        try:
            setting.kind.check(value)
        except ValueError as error:
            raise UserError(f"{name} {error}") from None
    if format not in FORMATS:
        raise UserError(f"format must be one of {', '.join(FORMATS)}")
