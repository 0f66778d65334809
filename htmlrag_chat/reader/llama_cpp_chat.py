"""llama.cpp (llama-cpp-python) in this process, reading a quantised GGUF model file: the
chat model of the GGUF backend (``reader/backends/gguf_file.py``) and of a judge named by
its file (``reader/judge.py``).

A GGUF file is what every CPU user of Ollama, LM Studio or llama.cpp already has, and a
4-bit 8B model needs about 5 GB where transformers' float32 needs 32. On a CPU the wait is
the prefill, so three things matter more than anything else here:

- The llama.cpp state is kept between calls: the prompt layout (``reader/layout.py``) makes
  every call continue the previous one, and only the tokens after the longest prefix shared
  with what the context already holds are evaluated. ``calls`` records, per call, the
  prompt's tokens and how many were evaluated, which is how the reuse is measured.
- The prefill is fed in pieces sized to about a quarter of a second each (never fewer than
  ``MIN_PIECE`` tokens, below which prefill slows down several times), with a stop check
  between them and between generated tokens, so Esc or Ctrl+C stops within half a second
  on an idle machine even while a long context is read (llama.cpp cannot be interrupted
  inside a piece).
- Budgets are counted with the model's own vocabulary (``LlamaCppTokenCounter``).

Control tokens in message text stay text: messages are rendered with the GGUF's own chat
template and tokenized with special tokens parsed (the template's own markers must be), so
every message is defused first (``safety.defuse_control_tokens``).

The ``gguf`` extra is declared here, beside the imports of llama_cpp (made only when a
model loads, so that the command line starts without it), and the backend takes it from
here: importing either module declares it, and a missing llama-cpp-python is the one line
naming it.
"""

from __future__ import annotations

import atexit
import codecs
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.base.safety import defuse_control_tokens
from htmlrag_chat.modelio.extras import Extra, declare_extra, needed
from htmlrag_chat.reader import CallStats, Message
from htmlrag_chat.reader.streaming import Put, fit_answer, thread_call, thread_stream
from htmlrag_chat.reader.think import OPEN, opens_reasoning
from htmlrag_chat.reader.verdict import from_logits, word_ids

EXTRA = Extra(
    "gguf",
    ("llama_cpp",),
    "it compiles llama.cpp on its first install: 10-40 minutes on 2 cores, prebuilt CPU "
    "wheels in docs/install.md",
)
declare_extra(EXTRA)

# llama.cpp's extra buffer types (weights repacked for AMX tiles or wider kernels): "0" off,
# "1" on; unset, off on a CPU with AMX. A llama.cpp built for such a CPU (llama-cpp-python
# 0.3.36) crashed in its AMX matrix product on every multi-token batch on the machine this
# was developed on, and this is the one switch around it short of a rebuild.
EXTRA_BUFFERS_ENV = "HTMLRAG_CHAT_LLAMA_EXTRA_BUFFERS"
DEFAULT_CONTEXT = 8192  # the window a GGUF reader opens unless told (its KV cache is RAM)
PIECE_SECONDS = 0.25  # prefill between two stop checks, when pieces that short are efficient
# The fewest tokens a prefill piece holds: every piece reads all the weights, and a short
# batch reads them for too few tokens. Qwen2.5-1.5B Q4 on 2 loaded cores prefilled 256
# tokens in 38-45 s in pieces of 8, 23 s of 16, 17 s of 32 and 10-11 s of 64 to 256; a
# stop then waits for at most one such piece (a few seconds on a busy machine).
MIN_PIECE = 64
# One model per process (``load_gguf``), one call on it at a time: a stopped answer's thread
# lets go at its next stop check, and the next call (of any reader of the file) waits.
MODEL_LOCK = threading.Lock()


class _Stopped(Exception):
    pass


@dataclass
class LlamaCppChat:
    """A ``ChatModel`` running a GGUF file in this process."""

    path: str
    context: int | None = None  # the window to open (None: the model's, at most 8192)
    threads: int | None = None  # None: every core
    gpu_layers: int = -1  # layers offloaded when llama.cpp was built for a GPU (-1: all)
    calls: list[CallStats] = field(default_factory=list)

    @property
    def name(self) -> str:
        return Path(self.path).name

    @property
    def on_gpu(self) -> bool:
        """Whether llama.cpp offloads the model's layers (a build with a GPU backend)."""
        return self.gpu_layers != 0 and gpu_offload()

    @property
    def context_tokens(self) -> int:
        return self.load().n_ctx()

    @property
    def parameters(self) -> int | None:
        return int(self.load()._model.n_params())

    def load(self) -> Any:
        """The loaded model (``ModelUnavailable`` when llama-cpp-python or the file is
        missing, or the file is no model llama.cpp can read)."""
        return load_gguf(
            str(expand_user(self.path).resolve()),
            self.context,
            self.threads or _cores(),
            self.gpu_layers,
        )

    def prompt_ids(self, messages: Sequence[Message]) -> list[int]:
        """The prompt in the GGUF's own chat template, as tokens."""
        llama = self.load()
        rendered = _formatter(llama)(
            messages=[
                {"role": m.role, "content": defuse_control_tokens(m.content)} for m in messages
            ]
        )
        add_bos = not getattr(rendered, "added_special", False)
        return llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=add_bos, special=True)

    def identity(self) -> dict[str, str]:
        """The sha256 of the file's bytes: a file replaced under the same name is another
        model (an evaluation measures it again)."""
        from htmlrag_chat.modelio.wheel_model import file_sha256

        return {"sha256": file_sha256(expand_user(self.path))}

    def forget(self) -> None:
        """Drop the kept state, so that the next call prefills its whole prompt as a fresh
        process would (``eval answers`` times every question cold, whatever ran before)."""
        with MODEL_LOCK:
            self.load().reset()

    def pending_tokens(self, messages: Sequence[Message]) -> int | None:
        """Read without the lock: a count for the status line, never worth a wait."""
        ids = self.prompt_ids(messages)
        return len(ids) - _reusable(self.load(), ids)

    async def stream(self, messages: Sequence[Message], max_tokens: int) -> AsyncIterator[str]:
        llama = self.load()
        ids = self.prompt_ids(messages)
        max_tokens = fit_answer(self.name, len(ids), max_tokens, llama.n_ctx())
        if opens_reasoning(llama.detokenize(ids[-16:], special=True).decode(errors="replace")):
            yield OPEN  # the template opened a think block: the reply starts inside it

        def generate(put: Put, stop: threading.Event) -> None:
            try:
                with MODEL_LOCK:
                    self._generate(llama, ids, max_tokens, stop, put)
            except _Stopped:
                pass

        async for text in thread_stream(generate):
            yield text

    async def yes_probabilities(self, prompts: Sequence[Sequence[Message]]) -> list[float | None]:
        """For each prompt, the probability that the reply starts with Yes rather than No,
        from its first token's logits: one prefill of what the kept state does not hold
        (a judge's prompt continues the answer's, so a few dozen tokens), no generation."""
        llama = self.load()
        ids_of = [self.prompt_ids(messages) for messages in prompts]
        yes, no = _yes_no(llama)

        def judge(stop: threading.Event) -> list[float | None]:
            verdicts = []
            with MODEL_LOCK:
                for ids in ids_of:
                    evaluated = _prefill(llama, ids, stop)
                    llama.eval(ids[-1:])
                    self.calls.append(CallStats(len(ids), evaluated))
                    verdicts.append(from_logits(_last_logits(llama), yes, no))
            return verdicts

        try:
            return await thread_call(judge)
        except _Stopped:
            return [None] * len(prompts)

    def _generate(
        self, llama: Any, ids: list[int], max_tokens: int, stop: threading.Event, put: Put
    ) -> None:
        """Prefill in timed pieces, then sample greedily token by token (worker thread)."""
        import llama_cpp

        evaluated = _prefill(llama, ids, stop)
        call = CallStats(len(ids), evaluated)
        self.calls.append(call)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        tokens = llama.generate(ids, temp=0.0, top_k=1, repeat_penalty=1.0, reset=True)
        for produced, token in enumerate(tokens, start=1):
            self.calls[-1] = call = replace(call, generated=produced)
            if stop.is_set():
                raise _Stopped
            if llama_cpp.llama_vocab_is_eog(llama._model.vocab, token):
                break
            text = decoder.decode(llama.detokenize([token]))
            if text:
                put(text)
            if produced >= max_tokens:
                break
        tail = decoder.decode(b"", final=True)
        if tail:
            put(tail)


def _cores() -> int:
    """The cores this process may run on (a container or ``taskset`` may allow fewer than
    the machine has)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _last_logits(llama: Any) -> Any:
    """The logits of the token evaluated last: llama.cpp's own buffer (llama-cpp-python
    keeps them in ``scores`` only with ``logits_all``, which costs every prefill a copy)."""
    import numpy as np

    return np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(llama.n_vocab(),))


@lru_cache(maxsize=1)
def _yes_no(llama: Any) -> tuple[list[int], list[int]]:
    return word_ids(lambda text: llama.tokenize(text.encode("utf-8"), add_bos=False))


def _reusable(llama: Any, ids: Sequence[int]) -> int:
    """How many leading tokens of ``ids`` the context already holds (never all of them:
    the last one is evaluated again for its logits)."""
    held = llama.input_ids[: llama.n_tokens]
    shared = 0
    for have, want in zip(held, ids[:-1], strict=False):
        if have != want:
            break
        shared += 1
    return shared


def _prefill(llama: Any, ids: Sequence[int], stop: threading.Event) -> int:
    """Evaluate all of ``ids`` but the last token (which ``generate`` evaluates for its
    logits), after the prefix the context already holds, in pieces of about
    ``PIECE_SECONDS``; returns the tokens evaluated, that last one included."""
    shared = _reusable(llama, ids)
    llama.n_tokens = shared  # eval() drops the context's keys from here on
    todo, done, size = ids[shared:-1], 0, MIN_PIECE
    while done < len(todo):
        if stop.is_set():
            raise _Stopped
        piece = todo[done : done + size]
        started = time.perf_counter()
        llama.eval(piece)
        seconds = max(time.perf_counter() - started, 1e-4)
        done += len(piece)
        size = max(MIN_PIECE, min(llama.n_batch, int(len(piece) * PIECE_SECONDS / seconds)))
    return len(ids) - shared


def judge_on_file(path: Path, reader: object, context: int) -> LlamaCppChat:
    """The GGUF file at ``path`` as the evidence check's judge (``--judge-model``): the
    reader's own model when it reads that very file, else the file opened on its own and
    loaded now (one that cannot be loaded is an error, ``ModelUnavailable``)."""
    if isinstance(reader, LlamaCppChat) and expand_user(reader.path) == path:
        return reader
    judge = LlamaCppChat(str(path), context=context)
    judge.load()
    return judge


def gpu_offload() -> bool:
    """Whether the installed llama.cpp was built with a GPU backend (CUDA, Metal, Vulkan,
    ...), so that it can offload layers; False without llama-cpp-python."""
    try:
        llama_cpp = _llama_cpp()
    except ModelUnavailable:
        return False
    return bool(llama_cpp.llama_supports_gpu_offload())


def _llama_cpp(purpose: str = "a GGUF reader") -> Any:
    """llama-cpp-python, imported (``MissingExtra`` naming ``purpose`` without it)."""
    # OpenMP threads that spin while they wait for each other turn a busy machine's prefill
    # 6x slower (measured with 2 threads on 2 shared cores); sleeping costs little when
    # idle. Read when llama.cpp's OpenMP runtime loads, so before the import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    with needed(EXTRA.name, purpose):
        import llama_cpp
    return llama_cpp


@lru_cache(maxsize=2)  # the reader's, and a judge named for it (reader/judge.py)
def load_gguf(path: str, context: int | None, threads: int, gpu_layers: int) -> Any:
    """One model per file per process: a second reader of the same file shares its
    context."""
    llama_class = _llama_cpp(f"{Path(path).name}: a GGUF reader").Llama
    if not Path(path).is_file():
        raise ModelUnavailable(f"{path}: no such GGUF file")
    window = context or DEFAULT_CONTEXT

    def open_model(n_ctx: int) -> Any:
        try:
            with extra_buffers(extra_buffers_wanted()):
                return llama_class(
                    model_path=path,
                    n_ctx=n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_gpu_layers=gpu_layers,
                    verbose=False,
                )
        except (ValueError, RuntimeError) as error:
            raise ModelUnavailable(f"{path}: llama.cpp cannot load it ({error})") from error

    llama = open_model(window)
    trained = llama._model.n_ctx_train()
    if context is None and 0 < trained < window:  # never open more than it was trained on
        del llama
        llama = open_model(trained)
    atexit.register(llama.close)  # freed before the interpreter tears llama_cpp down
    if "tokenizer.chat_template" not in llama.metadata:
        raise ModelUnavailable(f"{path}: no chat template, so not a chat model to read with")
    return llama


def extra_buffers_wanted() -> bool:
    """Whether llama.cpp may use its extra buffer types: as ``EXTRA_BUFFERS_ENV`` says, else
    wherever the CPU has no AMX (whose path crashed here, see above)."""
    setting = os.environ.get(EXTRA_BUFFERS_ENV)
    if setting is not None:
        return setting != "0"
    try:
        return "amx_tile" not in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:  # not Linux: no AMX path to avoid
        return True


@contextmanager
def extra_buffers(allowed: bool) -> Iterator[None]:
    """While a model loads, llama.cpp's ``use_extra_bufts`` as given (``Llama`` takes no
    such argument: its default parameters are wrapped for the moment of the load)."""
    import llama_cpp.llama_cpp as low

    original = low.llama_model_default_params
    if allowed:
        yield
        return

    def without() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    low.llama_model_default_params = without
    try:
        yield
    finally:
        low.llama_model_default_params = original


@lru_cache(maxsize=1)
def _formatter(llama: Any) -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text(token: int) -> str:
        return llama._model.token_get_text(token) if token != -1 else ""

    return Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"],
        eos_token=text(llama.token_eos()),
        bos_token=text(llama.token_bos()),
        add_generation_prompt=True,
    )


@dataclass
class LlamaCppTokenCounter:
    """Counts tokens with the GGUF's own vocabulary (llama.cpp's tokenizer, in C++)."""

    llama: Any
    name: str
    exact: bool = True

    def count(self, text: str) -> int:
        return len(self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]
