"""The work behind each tool, on parts loaded once and shared by every call.

Calls run at once on one event loop: each gets its own agent (``wiring.Parts.agent``: its
own progress sink, budget and page count) over the one reader, token counter and scorers,
and the one cache file. The store is used from the loop's thread only, each write one short
transaction (WAL), and the CPU work of several calls takes turns on the scorers
(``OneAtATime``): the generative scorer keeps a KV cache between forward passes, and two
cores gain nothing from two at once.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from htmlrag_chat import cancel
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.errors import UserError
from htmlrag_chat.events import Event, EventSink, Notice, Skipped
from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.rendering import RENDERINGS, render
from htmlrag_chat.mcp.results import AnswerResult, ContextSource, LeftOut, WebContext
from htmlrag_chat.mcp.untrusted import Fence
from htmlrag_chat.recorder import MissingFromRecording
from htmlrag_chat.safety import one_line, safe_url
from htmlrag_chat.scoring import BlockScorer
from htmlrag_chat.settings.kinds import domain
from htmlrag_chat.web.guard import Refused, check_url

if TYPE_CHECKING:
    from htmlrag_chat.reader import Source
    from htmlrag_chat.store.db import Store
    from htmlrag_chat.wiring import Parts

FORMATS = RENDERINGS  # how contents are written: html, markdown or text
MIN_BUDGET, MAX_BUDGET = 256, 32768
MAX_PAGES = 10
# Tokens set aside per source for its delimiter lines before pruning, so that the contents
# as handed over (delimiters included) fit the budget; what is still over is pruned again.
DELIMITER_TOKENS = 40
_FIT_ATTEMPTS = 3
# Sources pruned to a budget (an argument): what a tool gathers, tried again tighter if over.
Gather = Callable[[EventSink, int], Awaitable["list[Source]"]]
NOTHING_LEFT = "nothing in it matched the query well enough to fit the budget"


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


@dataclass
class ContextService:
    parts: Parts
    cache: Store  # the web cache (read-only in a replay)
    history: Store  # where conversations are kept (a scratch file in a replay)

    # -- web_context and page_context

    async def web_context(
        self,
        query: str,
        emit: EventSink,
        budget_tokens: int = 2048,
        pages: int = 5,
        site: str | None = None,
        format: str | None = None,
    ) -> WebContext:
        """``format`` None: the server's ``--render``; the budget counts contents as written."""
        query = _checked_query(query)
        search = f"{query} site:{_checked_site(site)}" if site else query
        format = format or self.parts.prune.render
        _check_limits(budget_tokens, pages, format)

        async def gather(agent_emit: EventSink, budget: int) -> list[Source]:
            agent = self.parts.agent(
                self.cache, agent_emit, budget=budget, pages=pages, rendering=format
            )
            sources = await agent.search_context(search)
            try:  # the search again, from the cache: pages fetched but pruned to nothing
                found = (await agent.web.search(search))[:pages]
            except MissingFromRecording:  # said in the notices
                found = []
            for result in found:
                left.setdefault(result.url, NOTHING_LEFT)
            return sources

        left: dict[str, str] = {}
        return await self._fitted(query, budget_tokens, pages, format, gather, left, emit)

    async def page_context(
        self, url: str, query: str, emit: EventSink, budget_tokens: int = 2048
    ) -> WebContext:
        query = _checked_query(query)
        _check_limits(budget_tokens, 1, "html")
        try:
            check_url(url)
        except Refused as refused:
            raise UserError(f"will not fetch {safe_url(url)}: {refused}") from None

        async def gather(agent_emit: EventSink, budget: int) -> list[Source]:
            agent = self.parts.agent(
                self.cache, agent_emit, budget=budget, pages=1, rendering="html"
            )
            sources = await agent.page_context(url, query)
            if not sources:
                left.setdefault(url, NOTHING_LEFT)
            return sources

        left: dict[str, str] = {}
        return await self._fitted(query, budget_tokens, 1, "html", gather, left, emit)

    async def _fitted(
        self,
        query: str,
        budget: int,
        pages: int,
        format: str,
        gather: Gather,
        left: dict[str, str],
        emit: EventSink,
    ) -> WebContext:
        """Gather sources pruned to leave room for their delimiters, count them as handed
        over, and prune tighter while they are over the budget; the last resort drops the
        last sources, so the total is never over."""

        notices: list[str] = []

        def sink(event: Event) -> None:
            if isinstance(event, Skipped) and event.kind == "page":
                left[event.what] = event.reason
            elif isinstance(event, Skipped):
                notices.append(f"skipped: {event.reason}")
            elif isinstance(event, Notice):
                notices.append(event.message)
            emit(event)

        target = budget - DELIMITER_TOKENS * pages
        for _ in range(_FIT_ATTEMPTS):
            sources = await gather(sink, max(target, MIN_BUDGET // 2))
            result = self._package(query, budget, format, sources, left)
            result.notices = [one_line(notice) for notice in dict.fromkeys(notices)]
            if result.total_tokens <= budget:
                return result
            target -= result.total_tokens - budget + DELIMITER_TOKENS
        while result.sources and result.total_tokens > budget:
            dropped = result.sources.pop()
            result.left_out.append(LeftOut(url=dropped.url, reason="over the token budget"))
            result.total_tokens -= dropped.tokens
        return result

    def _package(
        self, query: str, budget: int, format: str, sources: list[Source], left: dict[str, str]
    ) -> WebContext:
        fence = Fence()
        counter = self.parts.counter.counter
        contents = [fence.wrap(s.number, render(s.html, format)) for s in sources]
        tokens = counter.count_many(contents)
        used = {source.url for source in sources}
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
                    date=self._date(source.url),
                    tokens=count,
                    content=content,
                )
                for source, content, count in zip(sources, contents, tokens, strict=True)
            ],
            left_out=[
                LeftOut(url=safe_url(url), reason=one_line(reason))
                for url, reason in left.items()
                if url not in used
            ],
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


def _checked_query(text: str, what: str = "query") -> str:
    text = " ".join(text.split())
    if not text:
        raise UserError(f"the {what} is empty")
    return text


def _checked_site(site: str) -> str:
    """``site`` as ``--site`` reads it (``settings.kinds.domain``), or a one-line error."""
    try:
        return domain(site)
    except ValueError:
        raise UserError(f"site must be a domain such as docs.python.org, not {site!r}") from None


def _check_limits(budget: int, pages: int, format: str) -> None:
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise UserError(f"budget_tokens must be between {MIN_BUDGET} and {MAX_BUDGET}")
    if not 1 <= pages <= MAX_PAGES:
        raise UserError(f"pages must be between 1 and {MAX_PAGES}")
    if format not in FORMATS:
        raise UserError(f"format must be one of {', '.join(FORMATS)}")
