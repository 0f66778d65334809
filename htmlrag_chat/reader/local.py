"""The local reader: a transformers chat model (default Llama-3.1-8B-Instruct) on this machine.

Generation runs in a worker thread; a ``TextStreamer`` hands each finished piece of text to
the event loop, so the answer streams while the thread generates. Cancelling the consumer
sets a flag that a stopping criterion checks before every new token. The model loads once
per process (``load_causal_lm``), in bfloat16 on a GPU and float32 on the CPU.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from htmlrag_chat.device import pick_device
from htmlrag_chat.errors import UserError
from htmlrag_chat.extras import needed
from htmlrag_chat.loader import load_causal_lm
from htmlrag_chat.reader import DEFAULT_READER_MODEL, Message
from htmlrag_chat.reader.streaming import Put, fit_answer, thread_stream
from htmlrag_chat.reader.think import OPEN, opens_reasoning

with needed("transformers", "the local reader (--reader local)"):
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList, TextStreamer


class _PutStreamer(TextStreamer):
    """Hands each piece of decoded text to the event loop from the generating thread."""

    def __init__(self, tokenizer: Any, put: Put):
        super().__init__(tokenizer, skip_prompt=True, skip_special_tokens=True)
        self._put = put

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        if text:
            self._put(text)


class _StopWhenSet(StoppingCriteria):
    def __init__(self, stop: threading.Event):
        self._stop = stop

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> bool:
        return self._stop.is_set()


@dataclass
class LocalChat:
    model_name: str = DEFAULT_READER_MODEL
    device: str | None = None
    local_only: bool = False  # never download (``--reader auto``)
    gguf_file: str | None = None  # a GGUF file in the folder ``model_name``, dequantised

    @property
    def name(self) -> str:
        return self.model_name

    @property
    def context_tokens(self) -> int | None:
        model, _ = self.load()
        return getattr(model.config, "max_position_embeddings", None)

    def load(self) -> tuple[Any, Any]:
        """Model and tokenizer (ModelUnavailable when they cannot be loaded here)."""
        return load_causal_lm(
            self.model_name, pick_device(self.device), self.local_only, self.gguf_file
        )

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """The chat-templated prompt; control tokens inside messages stay text."""
        _, tokenizer = self.load()
        if not getattr(tokenizer, "chat_template", None):
            raise UserError(
                f"{self.model_name}: no chat template, so not a chat model to read with"
            )
        encoded = tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            tokenize=True,
            return_dict=True,
            sanitize_control_tokens=True,
        )
        return list(encoded["input_ids"])

    def pending_tokens(self, messages: Sequence[Message]) -> int | None:
        return len(self.prompt_ids(messages))  # generate() keeps no cache between calls

    async def stream(self, messages: Sequence[Message], max_tokens: int) -> AsyncIterator[str]:
        model, tokenizer = self.load()
        ids = self.prompt_ids(messages)
        max_tokens = fit_answer(self.model_name, len(ids), max_tokens, self.context_tokens)
        pad = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        )
        if opens_reasoning(tokenizer.decode(ids[-16:])):
            yield OPEN  # the template opened a think block: the reply starts inside it

        def generate(put: Put, stop: threading.Event) -> None:
            with torch.inference_mode():
                model.generate(
                    input_ids=torch.tensor([ids], device=model.device),
                    attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=model.device),
                    max_new_tokens=max_tokens,
                    do_sample=False,
                    streamer=_PutStreamer(tokenizer, put),
                    stopping_criteria=StoppingCriteriaList([_StopWhenSet(stop)]),
                    pad_token_id=pad,
                )

        async for text in thread_stream(generate):
            yield text
