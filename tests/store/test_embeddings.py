"""Block embeddings for scoring threads, in the cache file; read-only in a replay."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from htmlrag_chat.store.db import Store
from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings


def test_a_replay_reads_recorded_embeddings_and_keeps_nothing_new(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ThreadLocalEmbeddings(path).put_many("m", {"recorded": np.ones(4, dtype=np.float32)})
    replay = ThreadLocalEmbeddings(path, readonly=True)
    found = replay.get_many("m", ["recorded", "new"])
    replay.put_many("m", {"new": np.zeros(4, dtype=np.float32)})  # no write, no error
    assert list(found) == ["recorded"] and found["recorded"].tolist() == [1.0] * 4
    with Store.open(path, readonly=True) as store:
        assert store.stats()["embeddings"] == 1
