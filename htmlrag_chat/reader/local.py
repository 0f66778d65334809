"""The local reader: a transformers chat model (default Llama-3.1-8B-Instruct) on this machine.

Generation runs in a worker thread (``model.generate``); a streamer hands each finished piece
of text to the event loop, so the answer streams while the thread generates. Cancelling the
consumer sets a flag that the streamer checks at every new token. The model loads once per
process (``load_causal_lm``), in bfloat16 on a GPU and float32 on the CPU.

Decoding runs at the library's speed (bench/gpu.py measures it against plain ``generate``):
the streamer decodes at most 50 times a second, a window of the newest tokens (transformers'
``TextStreamer`` decodes the whole line so far at every token), and it is also where a stop
is noticed, so no stopping criterion adds a call per token.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import Any

from htmlrag_chat.base.device import pick_device
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.extras import needed
from htmlrag_chat.base.loader import cache_argument, load_causal_lm
from htmlrag_chat.reader import DEFAULT_READER_MODEL, Message
from htmlrag_chat.reader.streaming import Put, fit_answer, thread_call, thread_stream
from htmlrag_chat.reader.think import OPEN, opens_reasoning
from htmlrag_chat.reader.verdict import from_logits, word_ids

with needed("transformers", "the local reader (--reader local)"):
    import torch
    from transformers.generation.streamers import BaseStreamer


PUT_INTERVAL = 0.02  # seconds between pieces of text put while tokens come fast


class _Stopped(Exception):
    """The question was stopped: raised out of ``generate`` by the streamer."""


class _TextStream(BaseStreamer):
    """Takes each token ``generate`` makes and puts the new text for the event loop: at once
    after a quiet spell (the first token), else at most every ``PUT_INTERVAL`` seconds: 50
    updates a second look smooth, and a piece per token cost the tiny test Llama (a token a
    millisecond on the CPU) 16-20% over plain ``generate``, against 1-9% this way. The text
    is decoded incrementally: the tokens since the last piece, after the piece before them (so
    a word keeps its leading space), held back while they end in an incomplete character (a
    byte-level token can be half of one)."""

    def __init__(self, tokenizer: Any, put: Put, stop: threading.Event):
        self._decode = partial(tokenizer.decode, skip_special_tokens=True)
        self._put, self._stop = put, stop
        self._ids: list[int] = []
        self._prompt = True  # generate hands the prompt over first
        self._start = self._done = 0  # the window: ids[start:done] are put already
        self._last = -PUT_INTERVAL  # when a piece was last put (time.monotonic)

    def put(self, value: Any) -> None:
        if self._stop.is_set():
            raise _Stopped
        if self._prompt:
            self._prompt = False
            return
        self._ids.extend(value.reshape(-1).tolist())
        if time.monotonic() - self._last >= PUT_INTERVAL:
            self._flush(final=False)

    def end(self) -> None:
        self._flush(final=True)

    def _flush(self, final: bool) -> None:
        before = self._decode(self._ids[self._start : self._done])
        text = self._decode(self._ids[self._start :])
        if len(text) > len(before) and (final or not text.endswith("\ufffd")):
            self._put(text[len(before) :])
            self._start, self._done = self._done, len(self._ids)
            self._last = time.monotonic()


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

    @property
    def parameters(self) -> int | None:
        model, _ = self.load()
        return int(model.num_parameters())

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

    async def yes_probabilities(self, prompts: Sequence[Sequence[Message]]) -> list[float | None]:
        """For each prompt, the probability that the reply starts with Yes rather than No,
        from its first token's logits: the prompts' shared prefix (the answer's prompt and
        the answer) read once, then each prompt's own end against it."""
        model, tokenizer = self.load()
        ids_of = [self.prompt_ids(messages) for messages in prompts]
        yes, no = word_ids(lambda text: tokenizer.encode(text, add_special_tokens=False))
        shared = min(_shared_prefix(ids_of), *(len(ids) - 1 for ids in ids_of)) if ids_of else 0
        name = cache_argument(model)

        def judge(stop: threading.Event) -> list[float | None]:
            verdicts: list[float | None] = []
            with torch.inference_mode():
                cache = None
                if shared:
                    prefix = torch.tensor([ids_of[0][:shared]], device=model.device)
                    cache = getattr(model(input_ids=prefix, use_cache=True, logits_to_keep=1), name)
                for ids in ids_of:
                    if stop.is_set():
                        raise _Stopped
                    out = model(
                        input_ids=torch.tensor([ids[shared:]], device=model.device),
                        use_cache=cache is not None,
                        logits_to_keep=1,
                        **({name: cache} if cache is not None else {}),
                    )
                    verdicts.append(from_logits(out.logits[0, -1].float().tolist(), yes, no))
                    if cache is not None:  # back to the shared prefix (crop takes -tokens)
                        cache.crop(shared - cache.get_seq_length())
            return verdicts

        try:
            return await thread_call(judge)
        except _Stopped:
            return [None] * len(prompts)

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
            with torch.inference_mode(), suppress(_Stopped):
                model.generate(
                    input_ids=torch.tensor([ids], device=model.device),
                    attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=model.device),
                    max_new_tokens=max_tokens,
                    do_sample=False,
                    streamer=_TextStream(tokenizer, put, stop),
                    pad_token_id=pad,
                )

        async for text in thread_stream(generate):
            yield text


def _shared_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all of ``sequences`` share."""
    shared = 0
    for column in zip(*sequences, strict=False):
        if any(token != column[0] for token in column):
            break
        shared += 1
    return shared
