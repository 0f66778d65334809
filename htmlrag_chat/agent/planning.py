"""The agent's own LLM calls, kept off the path to the first answer token.

The floor of a question is its search and fetch, pruning, one prefill of the answer's prompt
and one token; every other call of the reader must hide behind that or not be made:

- ``complete``: a plan's or a check's reply, read as it streams and cut off once it says
  all it will (``plan_settled``, ``check_settled``): a check that starts with ENOUGH costs
  its first word.
- ``SidePlan``: a first question is searched as typed at once, and its plan (sub-queries
  for a comparison) runs beside that search and fetch, where the reader is free then (in
  this process on a GPU: ``plans_beside``). Its queries join the first round if the plan
  has replied by the time the question's own pages are in; otherwise it is stopped there,
  leaving the reader to pruning and the check, and what the pages lack comes from the
  check's second round, when it asks for one.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass

from htmlrag_chat.agent.plan import Plan, parse_plan, plan_settled
from htmlrag_chat.base.events import EventSink, ReaderBusy, stage
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.reader import ChatModel, Message, ReaderFailed, Turn
from htmlrag_chat.reader.layout import rewrite_messages

PLAN_TOKENS = 96
CHECK_TOKENS = 48


async def complete(
    chat: ChatModel,
    messages: list[Message],
    max_tokens: int,
    emit: EventSink,
    settled: Callable[[str], bool],
) -> str:
    """A whole reply (a plan or a check), saying first how much the reader must prefill,
    and stopped as soon as ``settled`` says the rest cannot change what is read from it."""
    emit(ReaderBusy("prefill", chat.pending_tokens(messages)))
    reply = ""
    stream = chat.stream(messages, max_tokens)
    try:
        async for chunk in stream:
            reply += chunk
            if settled(reply):
                break
    finally:
        if isinstance(stream, AsyncGenerator):  # closed now, not when collected: this
            await stream.aclose()  # is what stops the reader at its next token
    return reply


async def rewrite(
    chat: ChatModel, message: str, history: Sequence[Turn], max_queries: int, emit: EventSink
) -> Plan | None:
    """The plan the reader writes for ``message`` after ``history`` (None: its reply
    could not be read), its stage timed."""
    with stage(emit, "plan") as counts:
        plan = await _planned(chat, message, history, max_queries, emit)
        counts["queries"] = len(plan.queries) if plan else 0
    return plan


async def _planned(
    chat: ChatModel, message: str, history: Sequence[Turn], max_queries: int, emit: EventSink
) -> Plan | None:
    messages = rewrite_messages(message, history, max_queries)
    reply = await complete(chat, messages, PLAN_TOKENS, emit, plan_settled(max_queries))
    request = load_prompt("rewrite").format(message="", max_queries="")
    return parse_plan(reply, max_queries, request)


def plans_beside(setting: str, free: bool) -> bool:
    """Whether a first question's plan runs beside its search (``research.plan``): on, off,
    or, auto, where the reader is ``free`` while the question is searched (in this process
    on a GPU: ``Backend.free_while_searching``). On a CPU the plan takes the cores pruning
    and the check need and comes after the pages (tens of seconds); on compound questions
    it added no right answer for its seconds (bench/compound.py, docs/benchmarks.md)."""
    return setting == "on" or (setting == "auto" and free)


def first_queries(message: str, plan: Plan | None, max_queries: int) -> list[str]:
    """A first message's searches: the message as typed, then the plan's queries when it
    split the message into several (one query back is a rephrasing: the words as typed
    are better)."""
    extra = plan.queries if plan is not None and len(plan.queries) > 1 else ()
    return unique([message, *extra])[:max_queries]


@dataclass
class SidePlan:
    """A first question's plan, running beside its first search and fetch."""

    task: asyncio.Task[tuple[str, ...]]

    @classmethod
    def start(cls, chat: ChatModel, message: str, max_queries: int, emit: EventSink) -> SidePlan:
        """The plan of ``message``, started; its sub-queries are what it adds to the
        message as typed."""

        async def sub_queries() -> tuple[str, ...]:
            with stage(emit, "plan") as counts:
                try:
                    plan = await _planned(chat, message, (), max_queries, emit)
                except asyncio.CancelledError:  # stopped by ``stop``: said, and done
                    counts["stopped"] = 1
                    return ()
                except ReaderFailed:  # the answer's own call says what is wrong
                    counts["failed"] = 1
                    return ()
                queries = tuple(first_queries(message, plan, max_queries)[1:])
                counts["queries"] = len(queries)
            return queries

        return cls(asyncio.ensure_future(sub_queries()))

    def in_time(self) -> tuple[str, ...]:
        """At the join point (the question's own pages are in): the plan's sub-queries if
        it has replied, else none (the caller stops it)."""
        if not self.task.done() or self.task.cancelled():
            return ()
        return self.task.result()

    async def stop(self) -> None:
        """Stop a plan still running (the reader is needed, or the question ended); its
        stream closes and the reader stops at its next token."""
        if not self.task.done():
            self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            # The plan's own end is no news; the question's (Ctrl+C while the plan stops)
            # must go on up, or the stop would be swallowed here.
            this = asyncio.current_task()
            if this is not None and this.cancelling():
                raise


def unique(queries: Sequence[str]) -> list[str]:
    """``queries`` without repeats, case aside, in order."""
    seen: set[str] = set()
    kept = []
    for query in queries:
        if query.casefold() not in seen:
            seen.add(query.casefold())
            kept.append(query)
    return kept
