"""Block embeddings in the cache file, for scorers that run in worker threads.

A SQLite connection belongs to the thread that opened it, and the agent scores blocks off
the event loop, so each scoring thread gets its own connection to the same file (WAL lets
them coexist with the loop's writer; writes are short transactions). A replay's cache is
read-only: its recorded embeddings are still used, new ones are not kept.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from htmlrag_chat.store.db import Store


@dataclass
class ThreadLocalEmbeddings:
    path: Path
    readonly: bool = False
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return self._store().get_many(model, keys)

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        if not self.readonly:
            self._store().put_many(model, vectors)

    def _store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store.open(self.path, readonly=self.readonly)
        return store
