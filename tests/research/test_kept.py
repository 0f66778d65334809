"""Parts kept for a rerun: in the cache file, in the side file for a read-only replay, and
nowhere (said once) when neither can be written; a record that cannot be read is asked
again."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from htmlrag_chat.research.kept import PART, ResearchCache, kept_answer, key
from htmlrag_chat.store.db import Store


def test_a_kept_record_is_found_under_its_key_until_it_is_too_old(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        cache = ResearchCache(store, print)
        cache.put(PART, key("a"), {"x": 1})
        assert cache.get(PART, key("a")) == {"x": 1}
        assert cache.get(PART, key("b")) is None
        assert key("a") != key("a", 1)
        old = ResearchCache(store, print, max_age=0.0)
        time.sleep(0.01)
        assert old.get(PART, key("a")) is None  # --refresh: asked again


def test_a_replay_keeps_parts_in_the_side_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = tmp_path / "derived.sqlite3"
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(side))
    Store.open(tmp_path / "c.db").close()
    with Store.open(tmp_path / "c.db", readonly=True) as store:
        cache = ResearchCache(store, print)
        cache.put(PART, key("a"), [1])
        assert cache.get(PART, key("a")) == [1]
        cache.close()
    with Store.open(side) as kept:
        assert kept.get_derived(PART, key("a")) is not None


def test_a_side_file_that_cannot_be_used_keeps_nothing_and_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = tmp_path / "derived.sqlite3"
    side.write_bytes(b"not a database" * 100)
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(side))
    Store.open(tmp_path / "c.db").close()
    notes: list[str] = []
    with Store.open(tmp_path / "c.db", readonly=True) as store:
        cache = ResearchCache(store, notes.append)
        cache.put(PART, key("a"), [1])
        assert cache.get(PART, key("a")) is None
        cache.put(PART, key("b"), [2])
    assert len(notes) == 1 and "a rerun asks them again" in notes[0]
    assert side.read_bytes() == b"not a database" * 100  # left as it is


@pytest.mark.parametrize(
    "record", [None, [], {"json": {}}, {"json": {"question": 1}, "markdown": ""}]
)
def test_a_record_this_code_cannot_read_is_no_answer(record: object) -> None:
    assert kept_answer(record) is None


def test_a_value_that_is_not_json_is_no_record(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        store.put_derived(PART, key("a"), b"\xff not json")
        assert ResearchCache(store, print).get(PART, key("a")) is None
