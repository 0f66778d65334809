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
    """A reader backed by a chat model, in this process or on a server: ``kind`` is the
    name of the backend that built it (``reader/backend.py``), ``label`` how the faces name
    it (default: the model's name)."""

    chat: ChatModel
    kind: str
    max_tokens: int = default("reader.max_tokens")
    label: str = ""

    def __post_init__(self) -> None:
        self.label = self.label or self.chat.name

    @property
    def name(self) -> str:
        return self.chat.name

    def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]:
        return self.chat.stream(answer_messages(question, sources, history), self.max_tokens)
