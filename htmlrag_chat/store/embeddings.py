"""Block embeddings in cache files, for scorers that run in worker threads.

A SQLite connection belongs to the thread that opened it, and the agent scores blocks off
the event loop, so each scoring thread gets its own connection to the same file (WAL lets
them coexist with the loop's writer; writes are short transactions).

Embeddings go into the web cache itself, except when that is opened read-only (a replayed
recording): then its recorded embeddings are still read, and new ones go into a side file of
derived artefacts, so that the second replay of a question costs no model call either.
Vectors are keyed by model and a hash of the text, so one side file serves every recording
without mixing them up. The side file holds nothing that cannot be computed again: when it
cannot be used (damaged, foreign, locked), the replay says so once and keeps this run's
embeddings in memory instead of failing; the file is left as it is, since
``$HTMLRAG_CHAT_DERIVED`` may name one we did not write.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from htmlrag_chat.base.paths import expand_user, shown_path
from htmlrag_chat.store.db import Store, StoreError, default_cache_path

DERIVED_NAME = "derived.sqlite3"
T = TypeVar("T")


def derived_cache_path() -> Path:
    """``$HTMLRAG_CHAT_DERIVED``, else ``derived.sqlite3`` beside the default cache file."""
    override = os.environ.get("HTMLRAG_CHAT_DERIVED")
    if override:
        return expand_user(override, "HTMLRAG_CHAT_DERIVED")
    return default_cache_path().with_name(DERIVED_NAME)


def embeddings_for(store: Store) -> ThreadLocalEmbeddings:
    """Where a scorer working for ``store`` finds and keeps block embeddings: the store's own
    file, or, when the store is read-only, the side file first and the store after it."""
    if store.readonly:
        return ThreadLocalEmbeddings(derived_cache_path(), recorded=store.path, notice=store.notice)
    return ThreadLocalEmbeddings(store.path)


@dataclass
class ThreadLocalEmbeddings:
    path: Path  # where embeddings are read and written
    recorded: Path | None = None  # a read-only file also read, after ``path``
    notice: Callable[[str], None] = print  # says that the side file is bypassed
    _local: threading.local = field(default_factory=threading.local, repr=False)
    _bypassed: bool = field(default=False, repr=False)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found = self._side(lambda store: store.get_many(model, keys))
        missing = [key for key in keys if key not in found]
        if missing and self.recorded is not None:
            found.update(self._stores()[1].get_many(model, missing))
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        self._side(lambda store: store.put_many(model, vectors))

    def _side(self, use: Callable[[Store], T]) -> T:
        """``use`` on the file written to; a side file that fails is bypassed for memory."""
        stores = self._stores()
        try:
            return use(stores[0])
        except StoreError as error:
            stores[0] = self._bypass(error)
            return use(stores[0])

    def _bypass(self, error: StoreError) -> Store:
        """A store in memory instead of a side file that fails (once said); the cache
        itself (no ``recorded`` file) is the user's to see, so its error goes on."""
        if self.recorded is None:
            raise error
        if not self._bypassed:
            self._bypassed = True
            reason = error.__cause__ or error  # SQLite's words, without advice about --cache
            self.notice(
                f"the side file {shown_path(self.path)} cannot be used ({reason}); this replay "
                "keeps its embeddings in memory instead (the file is left as it is)"
            )
        return Store.open(":memory:")

    def _stores(self) -> list[Store]:
        stores = getattr(self._local, "stores", None)
        if stores is None:
            recorded = [Store.open(self.recorded, readonly=True)] if self.recorded else []
            try:
                side = Store.open(self.path)
            except StoreError as error:
                side = self._bypass(error)
            stores = self._local.stores = [side, *recorded]
        return stores
