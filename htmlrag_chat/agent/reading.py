"""Reading: the reader's answer streamed through the filters every answer passes.

Kept apart from the question loop (``agent/loop.py``) because it is the one place where
model output becomes what a person reads: invented citations removed as they stream
(``CitationFilter``), control tokens, escapes and overrides defused (``SafeStream``), a
reasoning model's ``<think>`` blocks dropped (``ThinkFilter``), and quoted source text
shown as it is but escaped in the stored Markdown.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Protocol

from htmlrag_chat.base.events import (
    AnswerDelta,
    AnswerRetracted,
    EventSink,
    Notice,
    ReaderBusy,
    stage,
)
from htmlrag_chat.base.safety import SafeStream, text_safe
from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.citations import CitationFilter
from htmlrag_chat.reader.layout import answer_messages
from htmlrag_chat.reader.literal import Quoted, escape_markdown
from htmlrag_chat.reader.think import ThinkFilter


class Reader(Protocol):
    kind: str
    label: str  # how the faces name it

    # Read-only members: a reader's own may be narrower (``LLMReader.chat`` is never None).
    @property
    def chat(self) -> ChatModel | None:
        """The LLM for rewriting and checks; None for the extractive reader."""
        ...

    @property
    def name(self) -> str: ...

    def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]: ...


async def read_answer(
    reader: Reader,
    question: str,
    sources: list[Source],
    history: Sequence[Turn],
    emit: EventSink,
    start: float,
) -> tuple[str, str, float | None, int]:
    """The answer as text and as Markdown, when its first piece came, and how many
    invented citations were taken out. Text the reader quotes from a source (``Quoted``)
    goes around the citation filter: shown as it is, escaped in the Markdown. A
    reasoning model's reasoning never gets past ``ThinkFilter``; when it turns out that
    what was shown was reasoning (a think block the template opened, closed with no
    warning), it is taken back (``AnswerRetracted``) and the answer starts again."""
    filters = _Filters(len(sources))
    thinking = ThinkFilter()  # a reasoning model's reasoning
    parts: list[tuple[str, bool]] = []
    first_token: float | None = None

    def show(text: str, quoted: bool = False) -> None:
        if text:
            parts.append((text, quoted))
            emit(AnswerDelta(text, quoted))

    with stage(emit, "read", len(sources)) as counts:
        chat = reader.chat
        if chat is not None:
            pending = chat.pending_tokens(answer_messages(question, sources, history))
            emit(ReaderBusy("prefill", pending))
        async for chunk in reader.answer(question, sources, history):
            if first_token is None:
                first_token = (time.perf_counter() - start) * 1000
                emit(ReaderBusy("generate"))
            if isinstance(chunk, Quoted):
                show(filters.citations.feed(filters.safe.finish()))
                show(filters.citations.before_quote())
                # Defused before it is escaped in the Markdown: escapes would hide tokens.
                show(text_safe(chunk), quoted=True)
                continue
            text = thinking.feed(chunk)
            if thinking.restarted:
                thinking.restarted = False
                parts.clear()
                filters = _Filters(len(sources))
                emit(AnswerRetracted())
                emit(Notice(f"{reader.name}: the text so far was its reasoning, not the answer"))
            show(filters.citations.feed(filters.safe.feed(text)))
        show(filters.citations.feed(filters.safe.feed(thinking.finish()) + filters.safe.finish()))
        show(filters.citations.finish())
        if thinking.reasoning and not parts:
            emit(Notice(f"{reader.name} was still reasoning when its answer ended (--max-tokens)"))
        counts.update(chars=sum(len(text) for text, _ in parts), removed=filters.citations.removed)
    text = "".join(text for text, _ in parts).strip()
    markdown = "".join(escape_markdown(t) if quoted else t for t, quoted in parts).strip()
    return text, markdown, first_token, filters.citations.removed


class _Filters:
    """What every piece of the answer passes, in this order: control tokens, escapes and
    overrides defused (``SafeStream``), then invented citations removed (``CitationFilter``).
    Both hold text back, so a retracted answer starts them afresh."""

    def __init__(self, sources: int) -> None:
        self.safe = SafeStream()
        self.citations = CitationFilter(sources)
