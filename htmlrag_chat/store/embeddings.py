"""Block embeddings in a cache file, for scorers that run in worker threads.

A SQLite connection belongs to the thread that opened it, and the agent scores blocks off
the event loop, so each scoring thread gets its own connection to the same file (WAL lets
them coexist with the loop's writer; writes are short transactions).

Embeddings go into the web cache itself, except when that is opened read-only (a replayed
recording): then into a side file of derived artefacts, so that the second replay of a
question costs no model call either. Vectors are keyed by model and a hash of the text, so
one side file serves every recording without mixing them up.
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
    """Where a scorer working for ``store`` keeps block embeddings: the store's own file,
    or the side file when the store is read-only."""
    return ThreadLocalEmbeddings(derived_cache_path() if store.readonly else store.path)


@dataclass
class ThreadLocalEmbeddings:
    path: Path
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return self._store().get_many(model, keys)

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self._store().put_many(model, vectors)

    def _store(self) -> Store:
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store.open(self.path)
        return store
