"""The token-counting protocol, below every layer that budgets in tokens, and the counter
over a Hugging Face tokenizer that is already loaded: what a counter is, not where one
comes from (``pruning/tokens.py`` loads them: the reader's tokenizer or the approximation).

``html/`` prunes to a token budget but must not import ``pruning.tokens`` (which loads
tokenizers through the hub); both import this module, which imports nothing of the package. The
transformers reader counts with its own tokenizer through ``HFTokenCounter`` too, so it
lives here, below the readers as well as the pruning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class TokenCounter(Protocol):
    """Counts tokens of the model that will read the text; ``exact`` is False for an estimate."""

    @property
    def name(self) -> str: ...  # read-only: a dataclass field or a property satisfies it

    @property
    def exact(self) -> bool: ...

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...


@dataclass
class HFTokenCounter:
    """Counts with a Hugging Face tokenizer, in batches through its Rust backend: a
    transformers tokenizer's, or a ``tokenizers.Tokenizer`` read from tokenizer.json."""

    tokenizer: Any
    name: str
    exact: bool = True

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        backend = getattr(self.tokenizer, "backend_tokenizer", self.tokenizer)
        if hasattr(backend, "encode_batch"):
            # encode_batch_fast (tokenizers >= 0.20) skips offsets, which counting never needs.
            encode = getattr(backend, "encode_batch_fast", backend.encode_batch)
            return [len(e.ids) for e in encode(list(texts), add_special_tokens=False)]
        encoded = self.tokenizer(list(texts), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in encoded]
