"""Block embeddings for scoring threads: in the cache file, or, for a read-only replay, in a
side file, the recording's own embeddings still read."""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.store.db import Store, StoreError
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
    # The side file is the user's alone too, as the cache is (documents in a replay).
    assert [oct(stat.S_IMODE(side.stat().st_mode))] == [oct(0o600)]


@pytest.mark.parametrize(
    "content", [b"not a database " * 300, b"SQLite format 3\x00" + b"\xff" * 8000]
)
def test_a_side_file_that_cannot_be_used_is_bypassed_once_and_left_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> None:
    path, side = tmp_path / "c.sqlite3", tmp_path / "derived.sqlite3"
    side.write_bytes(content)
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(side))
    ThreadLocalEmbeddings(path).put_many("m", {"recorded": np.ones(4, dtype=np.float32)})
    notes: list[str] = []
    with Store.open(path, readonly=True) as recording:
        recording.notice = notes.append
        replay = embeddings_for(recording)
        replay.put_many("m", {"new": np.zeros(4, dtype=np.float32)})
        found = replay.get_many("m", ["recorded", "new"])
    assert sorted(found) == ["new", "recorded"]
    assert len(notes) == 1 and str(side) in notes[0] and "in memory" in notes[0]
    assert "--cache" not in notes[0]  # no advice that does not help
    assert side.read_bytes() == content


def test_the_cache_itself_failing_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"not a database " * 300)
    with pytest.raises(StoreError):
        ThreadLocalEmbeddings(path).get_many("m", ["k"])
