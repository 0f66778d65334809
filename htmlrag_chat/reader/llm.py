"""The LLM reader: numbered sources and the question in, a streamed answer with [n] out.

The prompt is laid out by ``reader/layout.py`` so that the answer continues the calls
before it (the sufficiency check, the previous turns) and a prefix cache serves them all;
each source carries its publication day when the page declares one, and the system text
today's date.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from htmlrag_chat.reader import ChatModel, Source, Turn
from htmlrag_chat.reader.layout import answer_messages
from htmlrag_chat.settings.tree import default


@dataclass
class LLMReader:
    """A reader backed by a chat model: ``local`` (in this process) or ``openai`` (a server)."""

    chat: ChatModel
    kind: str
    max_tokens: int = default("reader.max_tokens")

    @property
    def name(self) -> str:
        return self.chat.name

    def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]:
        return self.chat.stream(answer_messages(question, sources, history), self.max_tokens)
