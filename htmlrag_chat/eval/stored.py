"""Evaluation results and pool page texts in the SQLite store, so a run resumes.

Every result is stored under a hash of everything it depends on: the item (its text and
the bytes of its pages, in order), the method, the budget, the tokenizer, the models and
the device they ran on, the source of the code that computed it (``code.py``) and
``EVAL_VERSION``. A rerun finds what an interrupted run
finished and computes only the rest; since stored results include their timings, the
report comes out the same either way.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Protocol

# Bump when what a key holds changes; a changed method, metric or scorer changes the code
# fingerprint in every key by itself.
EVAL_VERSION = 2
RESULTS = "eval"  # derived-artefact kinds in the store
TEXTS = "eval-text"


class DerivedStore(Protocol):
    """The part of ``store.db.Store`` the evaluation uses."""

    readonly: bool

    def get_derived(self, kind: str, key: str) -> bytes | None: ...

    def put_derived(self, kind: str, key: str, value: bytes) -> None: ...


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def key_of(*parts: object) -> str:
    """A stable key for JSON-serializable parts."""
    return digest(json.dumps([EVAL_VERSION, *parts], sort_keys=True).encode("utf-8"))


@dataclass
class EvalCache:
    """JSON values by kind and key; without a store (or with a read-only one, as in a
    replay) nothing is kept and every lookup misses or reads only."""

    store: DerivedStore | None = None

    def get(self, kind: str, key: str) -> Any | None:
        if self.store is None:
            return None
        value = self.store.get_derived(kind, key)
        try:
            return None if value is None else json.loads(value)
        except (TypeError, ValueError, RecursionError):  # not ours: computed again, replaced
            return None

    def put(self, kind: str, key: str, value: object) -> None:
        if self.store is not None and not self.store.readonly:
            self.store.put_derived(kind, key, json.dumps(value).encode("utf-8"))
