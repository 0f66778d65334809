"""Block embeddings in cache files, for scorers that run in worker threads.

A SQLite connection belongs to the thread that opened it, and the agent scores blocks off
the event loop, so each scoring thread gets its own connection to the same file (WAL lets
them coexist with the loop's writer; writes are short transactions).

Embeddings go into the web cache itself, except when that is opened read-only (a replayed
recording): then its recorded embeddings are still read, and new ones go into a side file of
derived artefacts, so that the second replay of a question costs no model call either.
Vectors are keyed by model and a hash of the text, so one side file serves every recording
without mixing them up.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from htmlrag_chat.store.db import Store, default_cache_path

DERIVED_NAME = "derived.sqlite3"


def derived_cache_path() -> Path:
    """``$HTMLRAG_CHAT_DERIVED``, else ``derived.sqlite3`` beside the default cache file."""
    override = os.environ.get("HTMLRAG_CHAT_DERIVED")
    if override:
        return Path(override).expanduser()
    return default_cache_path().with_name(DERIVED_NAME)


def embeddings_for(store: Store) -> ThreadLocalEmbeddings:
    """Where a scorer working for ``store`` finds and keeps block embeddings: the store's own
    file, or, when the store is read-only, the side file first and the store after it."""
    if store.readonly:
        return ThreadLocalEmbeddings(derived_cache_path(), recorded=store.path)
    return ThreadLocalEmbeddings(store.path)


@dataclass
class ThreadLocalEmbeddings:
    path: Path  # where embeddings are read and written
    recorded: Path | None = None  # a read-only file also read, after ``path``
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found = self._stores()[0].get_many(model, keys)
        missing = [key for key in keys if key not in found]
        if missing and self.recorded is not None:
            found.update(self._stores()[1].get_many(model, missing))
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self._stores()[0].put_many(model, vectors)

    def _stores(self) -> list[Store]:
        stores = getattr(self._local, "stores", None)
        if stores is None:
            stores = [Store.open(self.path)]
            if self.recorded is not None:
                stores.append(Store.open(self.recorded, readonly=True))
            self._local.stores = stores
        return stores
