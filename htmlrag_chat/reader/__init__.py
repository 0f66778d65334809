"""Readers turn numbered, pruned sources into an answer with [n] citations.

One interface over the backends of ``reader/registry.py``: a GGUF file or a transformers
model in this process, an OpenAI-compatible server (configured or found on this machine),
and an extractive reader that quotes source sentences without any LLM. The LLM ones are
``ChatModel``s (a text-streaming chat completion); the agent also uses them to rewrite
follow-ups into queries and to ask whether the sources suffice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from htmlrag_chat.base.errors import EXIT_NETWORK, UserError
from htmlrag_chat.base.sources import Source

__all__ = [
    "DEFAULT_READER_MODEL",
    "ChatModel",
    "Message",
    "ReaderFailed",
    "Source",
    "Turn",
]

# The method's reader (HtmlRAG used Llama-3.1-8B-Instruct); any local path or hub id works.
DEFAULT_READER_MODEL = "meta-llama/Llama-3.1-8B-Instruct"


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user" or "assistant"
    content: str


@dataclass(frozen=True)
class Turn:
    """An earlier exchange of the conversation and the sources its answer was given."""

    question: str
    answer: str
    sources: tuple[Source, ...] = ()


@dataclass(frozen=True)
class CallStats:
    """One call's prompt: its tokens, and how many the model evaluated (the rest came from
    a cache of the call before), and the tokens it generated. How prefix reuse, and what
    each of the agent's calls costs, are measured."""

    prompt_tokens: int
    evaluated: int
    generated: int = 0


class ChatModel(Protocol):
    """A chat LLM that streams its reply as text chunks."""

    # Read-only: the backends give them as properties (a model's never changes).
    @property
    def name(self) -> str:
        """The model id or path, for the record and the notice lines."""
        ...

    @property
    def context_tokens(self) -> int | None:
        """The context window, when known."""
        ...

    @property
    def parameters(self) -> int | None:
        """How many parameters the model has, when it can be told (a server's cannot)."""
        ...

    def stream(self, messages: Sequence[Message], max_tokens: int) -> AsyncIterator[str]:
        """The reply to ``messages``, at most ``max_tokens`` tokens, chunk by chunk.

        Cancelling the consuming task stops generation (the local model between two tokens,
        the server connection by closing it)."""
        ...

    def pending_tokens(self, messages: Sequence[Message]) -> int | None:
        """Prompt tokens of ``messages`` that no cache holds, which the model must read
        before its first token (None when unknown: a server decides)."""
        ...

    async def yes_probabilities(self, prompts: Sequence[Sequence[Message]]) -> list[float | None]:
        """For each prompt (a question to answer Yes or No), the probability that the reply
        starts with Yes rather than No, from one forward pass; None where the model gives
        none (``reader/verdict.py``). The evidence check's judge (``evidence/judging.py``)."""
        ...

    def identity(self) -> dict[str, str]:
        """What an evaluation records of the model besides its name, so that another
        model under the same name is measured again (a GGUF file's sha256, a server's
        address); empty when the name says it all."""
        ...

    def forget(self) -> None:
        """Drop what the model keeps of its last call (llama.cpp's context, a transformers
        KV cache), so that the next call reads its whole prompt, as a fresh process; a
        server's cache is the server's, so nothing there."""
        ...


class ReaderFailed(UserError):
    """The reader's server could not be reached or answered with an error."""

    exit_code = EXIT_NETWORK
