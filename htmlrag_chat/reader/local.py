"""The local reader: a transformers chat model (default Llama-3.1-8B-Instruct) on this machine.

Generation runs in a worker thread (``model.generate``); a streamer hands each finished piece
of text to the event loop, so the answer streams while the thread generates. Cancelling the
consumer sets a flag that the streamer checks at every new token. The model loads once per
process (``load_causal_lm``), in bfloat16 on a GPU and float32 on the CPU.

The KV cache is kept between calls, as the GGUF reader keeps llama.cpp's state
(``_State``): every call of a conversation continues the one before (``reader/layout.py``),
so only the tokens after the longest prefix shared with what the cache holds are read (the
check's prompt, then the answer's few tokens more, the judge's questions, a follow-up). That
rest is read in one plain forward pass, the speed of the model itself; ``generate`` then
starts from the cache with the prompt's last token.

Decoding runs at the library's speed (bench/gpu.py measures it against plain ``generate``):
the streamer decodes at most 50 times a second, a window of the newest tokens (transformers'
``TextStreamer`` decodes the whole line so far at every token), and it is also where a stop
is noticed, so no stopping criterion adds a call per token.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.extras import needed
from htmlrag_chat.modelio.loader import cache_argument, load_causal_lm
from htmlrag_chat.reader import DEFAULT_READER_MODEL, CallStats, Message
from htmlrag_chat.reader.streaming import Put, fit_answer, thread_call, thread_stream
from htmlrag_chat.reader.think import OPEN, opens_reasoning
from htmlrag_chat.reader.verdict import from_logits, word_ids

with needed("transformers", "the local reader (--reader local)"):
    import torch
    from transformers import DynamicCache
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

    @property
    def generated(self) -> list[int]:
        """The tokens generated so far."""
        return self._ids

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
class _State:
    """A loaded model's KV cache as the last call left it, and the tokens it holds; one
    call on the model at a time (``lock``), as one llama.cpp context."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    cache: Any = None
    ids: list[int] = field(default_factory=list)

    def reusable(self, ids: Sequence[int]) -> int:
        """How many leading tokens of ``ids`` the cache holds (never all of them: the
        last one is read again, for its logits)."""
        return min(_shared_prefix([self.ids, ids]), len(ids) - 1)

    def read(self, model: Any, ids: Sequence[int], upto: int) -> Any:
        """The cache brought to hold ``ids[:upto]``: cut back to what it shares with
        them, the rest read in one forward pass (worker thread, ``lock`` held); the
        logits of the last token read. Whatever fails on the way empties it."""
        shared = self.reusable(ids)
        try:
            if self.cache is None:
                self.cache = DynamicCache(config=model.config)
            held = self.cache.get_seq_length()
            if shared < held:  # crop takes -tokens in transformers 5
                self.cache.crop(shared - held)
            self.ids = list(ids[:shared])
            if upto <= shared:
                return None
            out = model(
                input_ids=torch.tensor([ids[shared:upto]], device=model.device),
                use_cache=True,
                logits_to_keep=1,
                **{cache_argument(model): self.cache},
            )
            self.ids = list(ids[:upto])
            return out.logits[0, -1]
        except BaseException:
            self.forget()
            raise

    def after(self, ids: Sequence[int]) -> None:
        """What the cache holds after ``generate`` wrote into it, ``ids`` being the prompt
        and what was generated (its last token never read); unknown: emptied."""
        held = self.cache.get_seq_length() if self.cache is not None else 0
        if held > len(ids):
            self.forget()
        else:
            self.ids = list(ids[:held])

    def forget(self) -> None:
        self.cache, self.ids = None, []


_STATES: weakref.WeakKeyDictionary[Any, _State] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def _state(model: Any) -> _State:
    """The one state of a loaded model (a reader and a judge of the same model share it)."""
    with _STATES_LOCK:
        return _STATES.setdefault(model, _State())


@dataclass
class LocalChat:
    model_name: str = DEFAULT_READER_MODEL
    device: str | None = None
    local_only: bool = False  # never download (``--reader auto``)
    calls: list[CallStats] = field(default_factory=list)  # each call's prompt, read, made

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
        return load_causal_lm(self.model_name, pick_device(self.device), self.local_only)

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
        """Read without the lock: a count for the status line, never worth a wait."""
        model, _ = self.load()
        ids = self.prompt_ids(messages)
        return len(ids) - _state(model).reusable(ids)

    def identity(self) -> dict[str, str]:
        """Nothing past its name: a hub id or a folder stands for its weights."""
        return {}

    def forget(self) -> None:
        """Drop the kept cache, so that the next call reads its whole prompt as a fresh
        process would (``eval answers`` times every question cold)."""
        model, _ = self.load()
        state = _state(model)
        with state.lock:
            state.forget()

    async def yes_probabilities(self, prompts: Sequence[Sequence[Message]]) -> list[float | None]:
        """For each prompt, the probability that the reply starts with Yes rather than No,
        from its first token's logits: each prompt read after what the kept cache holds (a
        judge's prompt continues the answer's call, so a few dozen tokens), no generation."""
        model, tokenizer = self.load()
        ids_of = [self.prompt_ids(messages) for messages in prompts]
        yes, no = word_ids(lambda text: tokenizer.encode(text, add_special_tokens=False))
        state = _state(model)

        def judge(stop: threading.Event) -> list[float | None]:
            verdicts: list[float | None] = []
            with state.lock, torch.inference_mode():
                for ids in ids_of:
                    if stop.is_set():
                        raise _Stopped
                    shared = state.reusable(ids)
                    logits = state.read(model, ids, len(ids))
                    self.calls.append(CallStats(len(ids), len(ids) - shared))
                    verdicts.append(from_logits(logits.float().tolist(), yes, no))
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
        state = _state(model)

        def generate(put: Put, stop: threading.Event) -> None:
            streamer = _TextStream(tokenizer, put, stop)
            with state.lock, torch.inference_mode():
                if stop.is_set():
                    return
                shared = state.reusable(ids)
                state.read(model, ids, len(ids) - 1)  # all but the last: generate reads it
                try:
                    with suppress(_Stopped):
                        model.generate(
                            input_ids=torch.tensor([ids], device=model.device),
                            attention_mask=torch.ones(
                                1, len(ids), dtype=torch.long, device=model.device
                            ),
                            max_new_tokens=max_tokens,
                            do_sample=False,
                            streamer=streamer,
                            pad_token_id=pad,
                            **{cache_argument(model): state.cache},
                        )
                except BaseException:
                    state.forget()  # a cache a failed step may have half written
                    raise
                state.after([*ids, *streamer.generated])
                made = len(streamer.generated)
                self.calls.append(CallStats(len(ids), len(ids) - shared, made))

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
