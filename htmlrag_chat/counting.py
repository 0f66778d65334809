"""The token-counting protocol, below every layer that budgets in tokens.

``html/`` prunes to a token budget but must not import ``tokens`` (which loads tokenizers
through the hub); both import this module, which imports nothing of the package.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class TokenCounter(Protocol):
    """Counts tokens of the model that will read the text; ``exact`` is False for an estimate."""

    name: str
    exact: bool

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...
