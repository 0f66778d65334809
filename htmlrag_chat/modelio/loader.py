"""Every model load of the process, one at a time, and each model once.

transformers 5 builds a model under process-wide patches that it undoes when the load ends:
the default dtype, ``PreTrainedModel.tie_weights`` replaced by a no-op, ``torch.linspace``.
Two loads at once in two threads restore each other's patched values, so one of them (or
every later one) never ties its weights and keeps its output layer on the meta device:
"Cannot copy out of meta tensor" when it is used (issue 29: the embedding model loading in
the warm-up thread while the main thread loads the pruner). sentence-transformers loads
through the same code, and a tokenizer may too. So every load of the package goes through
``shared``, under one lock for the whole process; a model asked for again is the one
already loaded.

Models load straight onto their device in their dtype (``device_map``, which needs
accelerate): no copy on the CPU first, which on a GPU took 24 s for an 8B model that loads in
4 s this way. The causal LMs of the local reader (``reader/local.py``) and the generative
pruner (``scoring/generative.py``) are loaded here, below both, so that the reader never
reaches into the scoring layer and a model both roles name loads once.
"""

from __future__ import annotations

import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from htmlrag_chat.base import cancel
from htmlrag_chat.modelio.device import model_dtype, prepare_attention
from htmlrag_chat.modelio.extras import needed
from htmlrag_chat.modelio.hub import load_pretrained

T = TypeVar("T")

PURPOSE = "language models on this machine (local reader, generative pruner)"
# How many models of a kind stay loaded: a reader and a pruner, a few embedding models. The
# least recently used goes when another comes (switching readers in the chat app).
KEEP = {"causal-lm": 2, "embedding": 4, "tokenizer": 4}

_LOCK = threading.RLock()  # reentrant: a load may ask for its tokenizer through here too
_LOADED: dict[str, OrderedDict[Hashable, Any]] = {kind: OrderedDict() for kind in KEEP}
_loads = 0


def shared(kind: str, key: Hashable, load: Callable[[], T]) -> T:
    """The model of ``kind`` under ``key``: ``load()`` the first time, under the process's
    one loading lock, and the same object after (until ``KEEP[kind]`` others came since)."""
    global _loads
    shelf = _LOADED[kind]
    with _LOCK:
        if key in shelf:
            shelf.move_to_end(key)
            return shelf[key]
        value = load()
        _loads += 1
        shelf[key] = value
        while len(shelf) > KEEP[kind]:
            shelf.popitem(last=False)
        return value


def load_count() -> int:
    """How many models (and tokenizers) this process has loaded so far."""
    return _loads


def load_causal_lm(model_name: str, device: str, local_only: bool = False) -> tuple[Any, Any]:
    """Model and tokenizer, loaded once per process and device (no remote code), on
    ``device`` in its dtype (``device.model_dtype``)."""
    key = (model_name, device, local_only)
    return shared("causal-lm", key, lambda: _load_causal_lm(model_name, device, local_only))


def _load_causal_lm(model_name: str, device: str, local_only: bool) -> tuple[Any, Any]:
    with needed("transformers", PURPOSE):
        import accelerate  # noqa: F401  (device_map: straight onto the device)
        from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()
    prepare_attention(device)
    tokenizer = load_pretrained(AutoTokenizer.from_pretrained, model_name, local_only=local_only)
    model = load_pretrained(
        AutoModelForCausalLM.from_pretrained,
        model_name,
        local_only=local_only,
        dtype=model_dtype(device),
        device_map=device,
    )
    return cancel.make_stoppable(model.eval()), tokenizer


def quiet_transformers() -> None:
    """No progress bars or library notes from transformers in the user's terminal."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def cache_argument(model: Any) -> str:
    """What the model's ``forward`` calls its KV cache: ``cache`` from transformers 5.24
    (``past_key_values`` is deprecated there, with a warning), ``past_key_values`` before."""
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"
