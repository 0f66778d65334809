from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.base.errors import EXIT_STORE
from htmlrag_chat.scoring.embed import EmbeddingScorer, text_key
from htmlrag_chat.store.db import SCHEMA_VERSION, Store, StoreError, default_cache_path
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.store.conftest import sql

ROOT = Path(__file__).resolve().parents[2]


def body_of(number: int, size: int = 1000) -> bytes:
    return bytes([number % 251]) * size


def page(number: int, size: int = 1000) -> FetchResult:
    body = body_of(number, size)
    return FetchResult(f"https://example.com/{number}", Outcome.OK, body=body, bytes=len(body))


# -- where the cache lives


def test_cache_path_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("HTMLRAG_CHAT_CACHE", str(tmp_path / "elsewhere.db"))
    assert default_cache_path() == tmp_path / "elsewhere.db"
    monkeypatch.delenv("HTMLRAG_CHAT_CACHE")
    assert default_cache_path().parts[-2:] == ("htmlrag-chat", "cache.sqlite3")


def test_open_creates_missing_folders(tmp_path):
    path = tmp_path / "a" / "b" / "cache.sqlite3"
    Store.open(path).close()
    assert path.is_file()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_cache_is_its_owners_alone_with_its_log_and_shared_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It holds private documents and every conversation: folders made for it are 0700,
    the file and the files SQLite makes beside it 0600, whatever the umask lets through."""
    previous = os.umask(0o022)  # the common one: 0644 files in 0755 folders
    try:
        home = tmp_path / "home"
        home.mkdir(mode=0o755)
        path = home / "cache" / "htmlrag-chat" / "cache.sqlite3"
        with Store.open(path) as store:
            store.put_search("q", [SearchResult("https://a.example/")])  # a write: the log
            files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
            assert [mode(file) for file in files] == [0o600] * 3
        assert [mode(folder) for folder in (path.parent, path.parent.parent)] == [0o700] * 2
        assert mode(home) == 0o755  # a folder that was there keeps its own
        shared = home / "shared.sqlite3"  # a file that is there keeps its own too
        shared.touch(mode=0o644)
        Store.open(shared).close()
        assert mode(shared) == 0o644
    finally:
        os.umask(previous)


# -- searches


def test_search_round_trip_keyed_by_query_and_settings(store):
    results = [SearchResult("https://a.example/", "A", "first"), SearchResult("https://b/")]
    store.put_search("docker license", results, region="de-de", safesearch="off", backend="ddg")
    assert store.get_search("docker license", region="de-de", safesearch="off") == results
    assert store.get_search("docker license") is None
    assert store.get_search("docker license", region="de-de") is None
    assert store.get_search("other", region="de-de", safesearch="off") is None


def test_a_search_for_any_settings_takes_the_newest(store):
    store.put_search("q", [SearchResult("https://a.example/")], region="de-de")
    store.put_search("q", [SearchResult("https://b.example/")], region="", safesearch="off")
    found = store.get_search("q", region=None, safesearch=None)
    assert [r.url for r in found] == ["https://b.example/"]
    assert store.get_search("q", region="fr-fr", safesearch=None) is None
    assert store.get_search("other", region=None, safesearch=None) is None


def test_a_later_search_replaces_the_earlier_one(store):
    store.put_search("q", [SearchResult("https://old/")])
    store.put_search("q", [SearchResult("https://new/", "東京", "ü")])
    store.put_search("q2", [])
    assert store.get_search("q") == [SearchResult("https://new/", "東京", "ü")]
    assert store.get_search("q2") == []  # no results is a hit, not a miss
    assert store.stats()["searches"] == 2


def test_a_search_older_than_max_age_is_a_miss(store, path):
    store.put_search("q", [SearchResult("https://a/")])
    sql(path, "UPDATE searches SET searched_at = searched_at - 100")
    assert store.get_search("q", max_age=50) is None
    assert store.get_search("q", max_age=1000) == [SearchResult("https://a/")]
    assert store.get_search("q") == [SearchResult("https://a/")]


def test_an_imported_search_matches_any_settings_until_too_old(store, path):
    """A recording carries no region or safesearch: what it stored answers whatever the
    settings, in record mode too; a search made with settings still matches only those."""
    store.put_search("q", [SearchResult("https://imported/")])  # as ``cache import`` does
    store.put_search("live", [SearchResult("https://live/")], region="de-de", safesearch="off")
    for region, safesearch in (("wt-wt", "moderate"), ("de-de", "off"), (None, None)):
        found = store.get_search("q", region=region, safesearch=safesearch, max_age=60)
        assert found == [SearchResult("https://imported/")]
    assert store.get_search("live", region="wt-wt", safesearch="moderate") is None
    sql(path, "UPDATE searches SET searched_at = searched_at - 100 WHERE query = 'q'")
    assert store.get_search("q", region="wt-wt", safesearch="moderate", max_age=50) is None


def test_a_newer_search_with_the_settings_wins_over_an_imported_one(store, path):
    store.put_search("q", [SearchResult("https://imported/")])
    sql(path, "UPDATE searches SET searched_at = searched_at - 100")
    store.put_search("q", [SearchResult("https://live/")], region="wt-wt", safesearch="off")
    assert store.get_search("q", region="wt-wt", safesearch="off") == [
        SearchResult("https://live/")
    ]
    assert store.get_search("q", region="fr-fr", safesearch="off") == [
        SearchResult("https://imported/")
    ]


# -- pages


def test_a_page_keeps_every_field(store):
    body = bytes(range(256)) * 3  # not text: every byte value must come back
    stored = FetchResult(
        url="https://example.com/a?b=1",
        outcome=Outcome.CHALLENGE,
        reason="a bot challenge",
        final_url="https://example.com/a/",
        status=403,
        content_type="text/html; charset=iso-8859-1",
        charset="iso-8859-1",
        headers={"Server": "cloudflare", "X-Note": "ünïcode"},
        body=body,
        bytes=len(body),
        ms=123.5,
        fetched_at=1_700_000_000.25,
    )
    store.put_page(stored)
    loaded = store.get_page(stored.url)
    assert loaded is not None and loaded.from_cache and not stored.from_cache
    assert loaded == FetchResult(**{**stored.__dict__, "from_cache": True})
    assert type(loaded.body) is bytes and type(loaded.outcome) is Outcome


def test_a_failed_page_has_no_body(store):
    store.put_page(FetchResult("https://x/", Outcome.FAILED, reason="timeout", fetched_at=5.0))
    loaded = store.get_page("https://x/")
    assert loaded is not None
    assert (loaded.outcome, loaded.reason, loaded.body, loaded.status) == (
        Outcome.FAILED,
        "timeout",
        None,
        None,
    )
    assert store.get_page("https://missing/") is None


def test_put_page_replaces_and_max_age_uses_fetched_at(store):
    old = FetchResult("https://x/", Outcome.OK, body=b"old", fetched_at=time.time() - 100)
    store.put_page(old)
    assert store.get_page("https://x/", max_age=50) is None
    assert store.get_page("https://x/", max_age=1000).body == b"old"
    store.put_page(FetchResult("https://x/", Outcome.OK, body=b"new", fetched_at=time.time()))
    assert store.get_page("https://x/", max_age=50).body == b"new"
    assert store.stats()["pages"] == 1


def test_a_failure_never_replaces_a_good_page(path, store):
    url = "https://x/"
    store.put_page(FetchResult(url, Outcome.FAILED, "HTTP 404 Not Found", status=404))
    store.put_page(FetchResult(url, Outcome.SKIPPED, "not HTML (application/pdf)"))
    assert store.get_page(url).outcome is Outcome.SKIPPED  # a failure replaces a failure
    store.put_page(FetchResult(url, Outcome.OK, body=b"good", status=200))
    for outcome in (Outcome.FAILED, Outcome.SKIPPED, Outcome.BLOCKED, Outcome.CHALLENGE):
        store.put_page(FetchResult(url, outcome, "went wrong", body=b"wall", status=503))
    with Store.open(path) as other:  # as another connection (or process) would
        other.put_page(FetchResult(url, Outcome.FAILED, "timed out after 20 s"))
    kept = store.get_page(url)
    assert kept.outcome is Outcome.OK and kept.body == b"good" and kept.status == 200
    store.put_page(FetchResult(url, Outcome.OK, body=b"newer", status=200))
    assert store.get_page(url).body == b"newer"  # a good page replaces a good page


# -- derived artefacts and embeddings


def test_derived_round_trip(store):
    store.put_derived("clean", "abc", b"<p>x</p>")
    store.put_derived("clean", "abc", b"<p>y</p>")
    store.put_derived("blocks", "abc", b"\x00\xff")
    assert store.get_derived("clean", "abc") == b"<p>y</p>"
    assert store.get_derived("blocks", "abc") == b"\x00\xff"
    assert store.get_derived("clean", "other") is None


def test_embeddings_round_trip_as_float32(store, path):
    rng = np.random.default_rng(0)
    vectors = {f"k{i}": rng.standard_normal(384).astype(np.float32) for i in range(1200)}
    store.put_many("model-a", vectors)
    store.put_many("model-b", {"k0": np.ones(3, dtype=np.float32)})
    store.close()
    with Store.open(path) as reopened:
        keys = [*vectors, "missing"]  # more keys than one query binds
        found = reopened.get_many("model-a", keys)
        assert found.keys() == vectors.keys()
        for key, vector in vectors.items():
            assert found[key].dtype == np.float32
            assert np.array_equal(found[key], vector)
        assert np.array_equal(reopened.get_many("model-b", ["k0"])["k0"], np.ones(3))
        assert reopened.get_many("model-c", ["k0"]) == {}
        assert reopened.get_many("model-a", []) == {}


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Connection.setlimit is 3.11+")
def test_more_keys_than_sqlite_binds_in_one_query(store):
    # Some builds keep SQLite's old limit of 999 bound parameters; this one may allow more.
    store._db.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)
    keys = [f"k{i}" for i in range(3000)]
    store.put_many("m", {key: np.full(2, i, dtype=np.float32) for i, key in enumerate(keys)})
    found = store.get_many("m", keys)
    assert len(found) == len(keys) and found["k2999"].tolist() == [2999.0, 2999.0]


def test_the_scorer_reuses_embeddings_from_the_store(path):
    texts = ["a block of text", "another block"]
    vectors = np.eye(2, 384, dtype=np.float32)
    with Store.open(path) as store:
        store.put_many("some-model", {text_key(t): v for t, v in zip(texts, vectors, strict=True)})
    with Store.open(path) as store:
        # Every text is cached, so the scorer never loads its (nonexistent) model.
        scorer = EmbeddingScorer(model_name="some-model", cache=store, device="cpu")
        assert np.array_equal(scorer.embed([texts[1], texts[0], texts[1]]), vectors[[1, 0, 1]])
        assert scorer.encoded == 0


# -- transactions


def test_a_failed_transaction_leaves_nothing(store):
    with pytest.raises(RuntimeError), store.transaction():
        store.put_page(page(1))
        store.put_search("q", [])
        raise RuntimeError
    assert store.get_page(page(1).url) is None and store.get_search("q") is None
    store.put_page(page(2))  # the connection is usable afterwards
    assert store.get_page(page(2).url) is not None


def test_many_asyncio_tasks_write_through_two_connections(path):
    """Two threads, each with its own connection and its own event loop of 100 writing
    tasks, started together: their transactions really contend for SQLite's one write lock.
    Every write lands, none fails with 'database is locked'."""
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def writer(parity: int) -> None:
        try:
            with Store.open(path) as store:

                async def write(number: int) -> None:
                    await asyncio.sleep(0)
                    store.put_page(page(number, 20_000))
                    await asyncio.sleep(0)
                    store.put_many("m", {f"k{number}": np.full(4, number, dtype=np.float32)})

                async def main() -> None:
                    start.wait()
                    await asyncio.gather(*(write(n) for n in range(parity, 200, 2)))

                asyncio.run(main())
        except BaseException as error:  # reported below, with the other thread's
            errors.append(error)

    Store.open(path).close()  # the schema first, so both threads only write rows
    threads = [threading.Thread(target=writer, args=(parity,)) for parity in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store.open(path) as store:
        assert store.stats()["pages"] == store.stats()["embeddings"] == 200
        for number in range(200):
            assert store.get_page(page(number).url).body == body_of(number, 20_000)
        assert store.get_many("m", ["k199"])["k199"].tolist() == [199.0] * 4


def test_a_writer_waits_for_the_other_connections_transaction(path):
    """While one connection holds the write lock, another's write waits for it (it does
    not fail with 'database is locked') and lands after the first commits."""
    Store.open(path).close()
    order: list[str] = []
    waiting = threading.Event()
    errors: list[BaseException] = []

    def second_writer() -> None:
        try:
            with Store.open(path) as store:
                waiting.set()
                store.put_page(page(2))
                order.append("second wrote")
        except BaseException as error:
            errors.append(error)

    with Store.open(path) as first, first.transaction():
        first.put_page(page(1))
        thread = threading.Thread(target=second_writer)
        thread.start()
        assert waiting.wait(10)
        thread.join(0.5)  # it cannot finish while we hold the lock
        assert thread.is_alive() and order == []
        order.append("first done")
    thread.join()
    assert errors == [] and order == ["first done", "second wrote"]
    with Store.open(path) as store:
        assert store.stats()["pages"] == 2


WRITER = """
import sys
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome

store = Store.open(sys.argv[1])
number = 0
while True:
    body = bytes([number % 251]) * 200_000
    store.put_page(FetchResult(f"https://example.com/{number}", Outcome.OK, body=body))
    number += 1
"""


def count_pages(path: Path) -> int:
    """Rows so far, read with a connection of our own; 0 while the file is not ready."""
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return conn.execute("SELECT count(*) FROM pages").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_mid_write_leaves_a_readable_database(path):
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path)], cwd=ROOT, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 60
        while count_pages(path) < 20:
            assert writer.poll() is None, writer.stderr.read().decode()
            assert time.monotonic() < deadline, "the writer wrote nothing"
            time.sleep(0.01)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        writer.stderr.close()
    assert writer.returncode == -signal.SIGKILL

    with Store.open(path) as store:
        written = store.stats()["pages"]
        assert written >= 20
        for number in range(written):  # each put commits alone, so rows are 0..written-1
            loaded = store.get_page(f"https://example.com/{number}")
            assert loaded.body == body_of(number, 200_000)
    assert sql(path, "PRAGMA integrity_check") == [("ok",)]


# -- the file: schema, damage, read-only


def test_a_fresh_file_has_the_current_schema_and_keeps_data(path):
    with Store.open(path) as store:
        store.put_derived("k", "v", b"1")
        conversation = store.new_conversation("c")
    assert SCHEMA_VERSION == 2
    assert sql(path, "PRAGMA user_version") == [(2,)]
    assert sql(path, "PRAGMA journal_mode") == [("wal",)]
    with Store.open(path) as store:
        assert store.get_derived("k", "v") == b"1"
        assert [c["id"] for c in store.conversations()] == [conversation]


def test_a_file_from_a_newer_version_is_refused(path):
    Store.open(path).close()
    sql(path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    for readonly in (False, True):
        with pytest.raises(StoreError, match="newer htmlrag-chat") as caught:
            Store.open(path, readonly=readonly)
        assert str(path) in str(caught.value)
    assert sql(path, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]


def test_an_upgrade_racing_a_newer_release_does_not_lower_the_version(path):
    with Store.open(path) as store:
        # Another process, newer than us, upgraded the file after we read its version.
        sql(path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        store._upgrade()
    assert sql(path, "PRAGMA user_version") == [(SCHEMA_VERSION + 1,)]


@pytest.mark.parametrize(
    "content",
    [
        random.Random(0).randbytes(8192),
        b"just some text, not a database\n" * 100,
        b"SQLite format 3\x00" + random.Random(1).randbytes(8176),
    ],
    ids=["random-bytes", "text", "sqlite-header-then-garbage"],
)
def test_a_damaged_file_is_a_one_line_store_error(path, content):
    path.write_bytes(content)
    for readonly in (False, True):
        with pytest.raises(StoreError) as caught:
            Store.open(path, readonly=readonly)
        message = str(caught.value)
        assert str(path) in message and "pass another" in message and "\n" not in message
        # Opened read-only it may be a recording: never advise moving it out of the way.
        assert ("move it away" in message) != readonly
        assert caught.value.exit_code == EXIT_STORE
    assert path.read_bytes() == content  # never rewritten


@pytest.mark.parametrize(
    "damaged",
    [range(100, 4096), range(3 * 4096, 30 * 4096)],
    ids=["schema-page", "data-pages"],
)
def test_a_cache_damaged_inside_is_a_store_error_when_used(path, damaged):
    with Store.open(path) as store:
        for number in range(50):
            store.put_page(page(number, 5000))
    data = bytearray(path.read_bytes())
    data[damaged.start : damaged.stop] = random.Random(2).randbytes(len(damaged))
    path.write_bytes(data)
    with pytest.raises(StoreError, match="malformed") as caught, Store.open(path) as store:
        for number in range(50):
            store.get_page(page(number).url)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_an_sqlite_file_of_another_program_is_refused(path):
    sql(path, "CREATE TABLE notes (text TEXT)")
    with pytest.raises(StoreError, match="not an htmlrag-chat cache") as caught:
        Store.open(path)
    assert str(path) in str(caught.value)
    assert sql(path, "PRAGMA journal_mode") == [("delete",)]  # left as it was


def test_a_directory_in_the_way_is_a_store_error(tmp_path):
    with pytest.raises(StoreError, match=str(tmp_path)):
        Store.open(tmp_path)


def test_readonly_open_of_a_missing_file_is_refused(path):
    with pytest.raises(StoreError, match=f"no cache at {path}"):
        Store.open(path, readonly=True)
    assert not path.exists()


def test_readonly_reads_and_refuses_writes(path):
    with Store.open(path) as store:
        store.put_page(page(1))
    with Store.open(path, readonly=True) as store:
        assert store.get_page(page(1).url).body == body_of(1)
        with pytest.raises(StoreError, match="readonly"):
            store.put_page(page(2))
        assert store.get_page(page(2).url) is None


def test_readonly_open_of_an_empty_file_asks_for_a_writable_open(path):
    path.touch()
    with pytest.raises(StoreError, match="without read-only"):
        Store.open(path, readonly=True)
    Store.open(path).close()  # an empty file is a new cache
    Store.open(path, readonly=True).close()


# -- maintenance


def test_clear_keeps_conversations_and_vacuum_shrinks_the_file(store):
    conversation = store.new_conversation("keep")
    store.add_message(conversation, "user", "hello")
    for number in range(20):
        store.put_page(page(number, 50_000))
    store.put_search("q", [SearchResult("https://a/")])
    store.put_derived("clean", "k", b"x")
    store.put_many("m", {"k": np.zeros(4, dtype=np.float32)})
    assert store.stats() | {"bytes": 0} == {
        "searches": 1,
        "pages": 20,
        "derived": 1,
        "embeddings": 1,
        "document_terms": 0,
        "documents": 0,
        "conversations": 1,
        "messages": 1,
        "answers": 0,
        "bytes": 0,
    }
    full = store.stats()["bytes"]
    assert full > 20 * 50_000

    store.clear()
    store.vacuum()
    stats = store.stats()
    assert stats["pages"] == stats["searches"] == stats["derived"] == stats["embeddings"] == 0
    assert stats["conversations"] == stats["messages"] == 1
    assert stats["bytes"] < full // 10
    assert store.messages(conversation)[0]["content"] == "hello"
