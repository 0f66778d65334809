"""One answer, read as ``ask`` reads it, and what it cost.

The answer goes through ``agent.reading.read_answer``, the one place where model output
becomes what a person reads (invented citations removed, control tokens defused, think
blocks dropped). A reading keeps what grading needs to check it as ``ask`` does (the
answer's Markdown; ``given`` adds each source's pruned HTML and visible text), not the
check's verdicts: a changed check is a new grade of the same answers, not new model calls.
A reader in this process keeps its state between calls (llama.cpp's, a KV cache), so that
a conversation's calls reuse their shared prefix; here every question starts cold
(``forget``), as a fresh ``ask`` does, so that a question's prefill time does not depend
on which question ran before it. Every prompt says that today is ``DAY``, whatever day
the evaluation runs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from htmlrag_chat.agent.reading import Reader, read_answer
from htmlrag_chat.base.events import ignore
from htmlrag_chat.base.prompts import dated
from htmlrag_chat.base.sources import Source
from htmlrag_chat.reader import ChatModel, Message, Turn
from htmlrag_chat.reader.layout import answer_messages, plain_messages, source_content

# The date the answer prompts give (``{today}`` in prompts/reader.md): a run that goes on
# past midnight, or resumes a day later, must read the same prompts as it began with.
DAY = "2026-11-26"
PRODUCT, PLAIN = "product", "plain"
PLAIN_TOKENS = 80  # the plain prompt asks for one sentence
PROMPTS: dict[str, Callable[[str, Sequence[Source]], list[Message]]] = {
    PRODUCT: answer_messages,
    PLAIN: plain_messages,
}


async def read(
    reader: Reader, question: str, sources: Sequence[Source], prompt: str = PRODUCT
) -> dict[str, Any]:
    """The answer to ``question`` from ``sources`` (with the product's ``prompt``, or the
    plain one it is measured against) and what it cost: prompt tokens (None when the
    backend does not say), seconds to the first piece of the answer (the prefill, for an
    LLM) and in all. All of it depends only on what the reader got and the reader."""
    chat = reader.chat
    if chat is not None:
        chat.forget()
    if prompt == PLAIN and chat is not None:
        reader = _Plain(reader, chat)
    with dated(DAY):
        messages = PROMPTS[prompt](question, sources)
        prompt_tokens = chat.pending_tokens(messages) if chat else None
        start = time.perf_counter()
        text, markdown, first_ms, removed = await read_answer(
            reader, question, list(sources), (), ignore, start
        )
        total = time.perf_counter() - start
    calls = getattr(chat, "calls", None)
    if prompt_tokens is None and calls:  # a server that reported its usage
        prompt_tokens = calls[-1].prompt_tokens
    return {
        "answer": text,
        "markdown": markdown,  # what the evidence check reads
        "removed_citations": removed,
        "prompt_tokens": prompt_tokens,
        "prefill_s": None if first_ms is None else round(first_ms / 1000, 3),
        "total_s": round(total, 3),
    }


def given(sources: Sequence[Source]) -> dict[str, Any]:
    """What the reader was given, as the report shows it and grading reads it: each
    source's number, address, title and content, the visible texts that answers are
    matched against, and the pruned HTML whose passages the evidence check cuts."""
    return {
        "sources": [
            {"number": s.number, "url": s.url, "title": s.title, "content": source_content(s)}
            for s in sources
        ],
        "texts": [source.text for source in sources],
        "html": [source.html for source in sources],
    }


def reading_key(
    question: str, sources: Sequence[Source], prompt: str = PRODUCT
) -> list[dict[str, str]]:
    """What an answer is read from, as a cache key's part: the answer's prompt messages."""
    with dated(DAY):
        messages = PROMPTS[prompt](question, sources)
    return [dataclasses.asdict(message) for message in messages]


@dataclass
class _Plain:
    """``reader``'s model answering from the plain prompt, through the same filters: the
    issue's measure of what the product's prompt costs or gains."""

    reader: Reader
    model: ChatModel
    kind: str = ""
    label: str = ""

    def __post_init__(self) -> None:
        self.kind, self.label = self.reader.kind, self.reader.label

    @property
    def chat(self) -> ChatModel:
        return self.model

    @property
    def name(self) -> str:
        return self.reader.name

    def answer(
        self, question: str, sources: Sequence[Source], history: Sequence[Turn] = ()
    ) -> AsyncIterator[str]:
        return self.model.stream(plain_messages(question, sources), PLAIN_TOKENS)


def reader_identity(reader: Reader) -> dict[str, str]:
    """What answers depend on besides the code and the prompt: the backend, the model's
    name and what its chat model says of itself (``ChatModel.identity``: a GGUF file's
    sha256, so a file replaced under the same name is measured again; a server's address)."""
    identity = {"kind": reader.kind, "model": reader.name}
    if reader.chat is not None:
        identity |= reader.chat.identity()
    return identity
