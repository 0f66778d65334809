"""Block embeddings for scoring threads: in the cache file, or, for a read-only replay, in a
side file, the recording's own embeddings still read."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.store.db import Store
from htmlrag_chat.store.embeddings import ThreadLocalEmbeddings, embeddings_for


def test_a_writable_cache_keeps_its_embeddings_itself(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.sqlite3") as store:
        embeddings = embeddings_for(store)
        embeddings.put_many("m", {"k": np.ones(4, dtype=np.float32)})
        assert embeddings.path == store.path and store.stats()["embeddings"] == 1


def test_a_replay_reads_recorded_embeddings_and_keeps_new_ones_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, side = tmp_path / "c.sqlite3", tmp_path / "derived.sqlite3"
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(side))
    ThreadLocalEmbeddings(path).put_many("m", {"recorded": np.ones(4, dtype=np.float32)})
    before = path.read_bytes()
    with Store.open(path, readonly=True) as recording:
        replay = embeddings_for(recording)
        replay.put_many("m", {"new": np.zeros(4, dtype=np.float32)})
        found = replay.get_many("m", ["recorded", "new", "unknown"])
    assert sorted(found) == ["new", "recorded"] and found["recorded"].tolist() == [1.0] * 4
    assert path.read_bytes() == before
    with Store.open(side, readonly=True) as store:
        assert store.stats()["embeddings"] == 1
