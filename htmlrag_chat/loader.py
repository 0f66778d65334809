"""Loading a transformers causal LM and its tokenizer, once per process and device.

Both the local reader (``reader/local.py``) and the generative pruner
(``scoring/generative.py``) read with causal LMs; they share this loader, below both, so
that the reader never reaches into the scoring layer and a model both roles name loads once.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from htmlrag_chat import cancel
from htmlrag_chat.device import model_dtype
from htmlrag_chat.extras import needed
from htmlrag_chat.hub import load_pretrained

PURPOSE = "language models on this machine (local reader, generative pruner)"


def load_causal_lm(
    model_name: str, device: str, local_only: bool = False, gguf_file: str | None = None
) -> tuple[Any, Any]:
    """Model and tokenizer, loaded once per process and device (no remote code).

    ``gguf_file``: a GGUF file inside the folder ``model_name``, which transformers
    dequantises (to float32 on the CPU) with the help of the ``gguf`` package."""
    return _load_causal_lm(model_name, device, local_only, gguf_file)  # one cache key


@lru_cache(maxsize=2)
def _load_causal_lm(
    model_name: str, device: str, local_only: bool, gguf_file: str | None
) -> tuple[Any, Any]:
    with needed("transformers", PURPOSE):
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    extra: dict[str, Any] = {"gguf_file": gguf_file} if gguf_file else {}
    tokenizer = load_pretrained(
        AutoTokenizer.from_pretrained, model_name, local_only=local_only, **extra
    )
    model = load_pretrained(
        AutoModelForCausalLM.from_pretrained,
        model_name,
        local_only=local_only,
        dtype=model_dtype(device),
        **extra,
    )
    return cancel.make_stoppable(model.to(device).eval()), tokenizer
