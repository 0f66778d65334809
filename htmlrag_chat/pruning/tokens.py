"""Token counters for budgets, loaded: the reader's tokenizer, or a documented approximation.

This module finds and loads them; what a counter is (``TokenCounter``) and the counter over
a loaded Hugging Face tokenizer are ``base/counting.py``, below the HTML core that counts.

Budgets are in tokens of the model that will read the context. When that tokenizer cannot
be loaded (offline, gated model), we count with ``ApproxTokenCounter`` and say so, rather
than fail: a budget that is a little off is more useful than no answer.

A tokenizer folder (or Hugging Face cache snapshot) that transformers would load from its
tokenizer.json unchanged is read by the ``tokenizers`` library alone: the same counts
without importing transformers, whose import and ``AutoTokenizer`` take 1.6 s of a cold
question on a small CPU, and which the core install does not have.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag_chat.base.counting import HFTokenCounter, TokenCounter
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.events import EventSink, Notice
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.html.text import CJK
from htmlrag_chat.modelio.extras import needed
from htmlrag_chat.modelio.hub import (
    cached_snapshot,
    check_obtainable,
    load_pretrained,
)
from htmlrag_chat.modelio.loader import quiet_transformers, shared

DEFAULT_TOKENIZER = "meta-llama/Llama-3.1-8B-Instruct"
# tokenizer_config classes that transformers builds from tokenizer.json as it is; other
# classes rebuild the backend from the vocabulary and their own settings.
_AS_SAVED = (None, "TokenizersBackend", "PreTrainedTokenizerFast")


# Letters split every few characters (BPE vocabularies hold common words whole but break
# rarer and non-English ones), digits in groups of three as Llama-3 does, punctuation in
# pairs (HTML's "</" and "><" are single tokens). CJK characters are about one token each.
_APPROX_PIECES = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]+|_")


@dataclass
class ApproxTokenCounter:
    """Estimates BPE tokens without a vocabulary.

    A run of letters counts ceil(len / 4) tokens, a group of up to three digits one, a run
    of punctuation ceil(len / 2), a CJK character one. On the 400 cleaned pages of the
    shared corpus this comes out at 1.07x the real Llama-3 count at the median and at or
    above it on 95% of pages, so budgets err on the short side.
    """

    name: str = "approx"
    exact: bool = False

    def count(self, text: str) -> int:
        total = 0
        for piece in _APPROX_PIECES.findall(text):
            first = piece[0]
            if first.isalpha():
                cjk = len(CJK.findall(piece))
                total += cjk + math.ceil((len(piece) - cjk) / 4)
            elif first.isdigit():
                total += 1
            else:
                total += math.ceil(len(piece) / 2)
        return total

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]


@dataclass(frozen=True)
class LoadedCounter:
    counter: TokenCounter
    notice: str | None  # why the approximation is used, for --stats and stderr


def load_token_counter(spec: str | None = None) -> LoadedCounter:
    """The tokenizer named by ``spec`` (path or hub id, default: the reader's), or the
    approximation with a notice saying why."""
    name = spec or DEFAULT_TOKENIZER
    if name == "approx":
        return LoadedCounter(ApproxTokenCounter(), None)
    path = expand_user(name)
    folder = path if path.is_dir() else cached_snapshot(name)
    backend = _saved_backend(folder) if folder is not None else None
    if backend is not None:
        return LoadedCounter(HFTokenCounter(backend, name), None)
    try:
        if folder is None:
            check_obtainable(name)  # not here and no hub: the reason, whatever is installed
        with needed("transformers", name):
            from transformers import AutoTokenizer

        quiet_transformers()
        tokenizer = shared(
            "tokenizer", name, lambda: load_pretrained(AutoTokenizer.from_pretrained, name)
        )
    except ModelUnavailable as error:
        notice = f"tokenizer {error}; counting tokens with the approximation instead"
        return LoadedCounter(ApproxTokenCounter(), notice)
    return LoadedCounter(HFTokenCounter(tokenizer, name), None)


def token_counter(spec: str | None, emit: EventSink) -> TokenCounter:
    """``load_token_counter(spec)``'s counter; when it is the approximation, why goes to
    ``emit`` with the missing models."""
    loaded = load_token_counter(spec)
    if loaded.notice:
        emit(Notice(loaded.notice, role="tokenizer", instead="approximate token counts"))
    return loaded.counter


def _saved_backend(folder: Path) -> Any:
    """The folder's tokenizer.json as a ``tokenizers.Tokenizer`` when transformers would
    count with it unchanged: a class in ``_AS_SAVED``, and every token the config names
    already one of the file's added tokens (transformers adds those it lacks). Else None."""
    saved, config = folder / "tokenizer.json", folder / "tokenizer_config.json"
    if not saved.is_file():
        return None
    try:
        settings = json.loads(config.read_text(encoding="utf-8")) if config.exists() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(settings, dict) or settings.get("tokenizer_class") not in _AS_SAVED:
        return None
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(saved))
    except Exception:  # a file tokenizers cannot read: transformers will say why
        return None
    added = {token.content for token in tokenizer.get_added_tokens_decoder().values()}
    if not _named_tokens(settings) <= added:
        return None
    # As transformers does: text that spells a special token is its characters, if asked.
    tokenizer.encode_special_tokens = bool(settings.get("split_special_tokens", False))
    return tokenizer


def _named_tokens(settings: dict[str, Any]) -> set[str]:
    """The token strings a tokenizer_config.json names: special tokens, extra ones, and
    the added-token table."""
    names: list[Any] = [value for key, value in settings.items() if key.endswith("_token")]
    for key in ("additional_special_tokens", "extra_special_tokens"):
        extra = settings.get(key) or []
        names += list(extra.values()) if isinstance(extra, dict) else list(extra)
    names += list((settings.get("added_tokens_decoder") or {}).values())
    found = set()
    for name in names:
        content = name.get("content") if isinstance(name, dict) else name
        if isinstance(content, str):
            found.add(content)
    return found
