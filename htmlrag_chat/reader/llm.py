"""The LLM reader: numbered sources and the question in, a streamed answer with [n] out.

The prompt (``prompts/reader.md`` and ``prompts/reader_question.md``) gives each source its
number, title, URL, publication day (when the page declares one) and pruned HTML, and the
system prompt today's date, so that "latest" and "this year" mean something. Earlier turns
of the conversation come before the question so that follow-ups like "shorter please" work;
their sources are not repeated.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from htmlrag_chat.prompts import load_prompt, today
from htmlrag_chat.reader import ChatModel, Message, Source
from htmlrag_chat.reader.citations import escape_markers
from htmlrag_chat.safety import text_safe
from htmlrag_chat.settings.tree import default

# Code in a page is quoted as code, brackets and all: its x[1] is left as it is.
_CODE_ELEMENT = re.compile(r"<(pre|code|kbd|samp)\b[^>]*>.*?</\1>", re.DOTALL | re.IGNORECASE)


def render_sources(sources: Sequence[Source]) -> str:
    """The sources as the reader reads them. Chat-template control tokens in page text must
    stay text: HTML serialization escapes "<" in text, but titles and URLs are raw, and a
    server's template cannot be asked to sanitize, so the markers themselves are broken
    (``text_safe``: with the controls, overrides and tag characters a model may obey)."""
    if not sources:
        return "(no sources)"
    return "\n\n".join(
        text_safe(f"[{source.number}] {escape_markers(source.title or 'Untitled')}\n"
        f"URL: {source.url}\n{_published(source)}{_escape_prose_markers(source.html)}")
        for source in sources
    )  # fmt: skip


def _published(source: Source) -> str:
    """The source header line with the page's declared publication day, if any."""
    return f"Published: {source.date}\n" if source.date else ""


def _escape_prose_markers(html: str) -> str:
    """A page's own footnote markers (``[3]``) escaped outside its code, so that the reader,
    which cites sources as ``[n]``, cannot copy one as a citation of source 3."""
    pieces, done = [], 0
    for code in _CODE_ELEMENT.finditer(html):
        pieces += [escape_markers(html[done : code.start()]), code[0]]
        done = code.end()
    return "".join([*pieces, escape_markers(html[done:])])


def reader_messages(
    question: str, sources: Sequence[Source], history: Sequence[Message] = ()
) -> list[Message]:
    question_text = load_prompt("reader_question").format(
        sources=render_sources(sources), question=question
    )
    return [
        Message("system", load_prompt("reader").format(today=today()).strip()),
        *history,
        Message("user", question_text.strip()),
    ]


@dataclass
class LLMReader:
    """A reader backed by a chat model: ``local`` (transformers) or ``openai`` (a server)."""

    chat: ChatModel
    kind: str
    max_tokens: int = default("reader.max_tokens")

    @property
    def name(self) -> str:
        return self.chat.name

    def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Message] = ()
    ) -> AsyncIterator[str]:
        return self.chat.stream(reader_messages(question, sources, history), self.max_tokens)
