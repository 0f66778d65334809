"""The local documents' rows: kept and replaced whole with their terms, touched, emptied by
``clear``; a file from before they existed still replays read-only and upgrades when
opened for writing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from htmlrag_chat.store.db import SCHEMA_VERSION, Store
from htmlrag_chat.store.documents import StoredDocument
from htmlrag_chat.store.schema import UPGRADES
from tests.store.conftest import sql


def document(path: str = "/notes/a.md", **changes: object) -> StoredDocument:
    values = dict(
        path=path, size=10, mtime_ns=1, sha256="h1", version=1, kind="markdown",
        title="A", reason=None, terms=3,
    )  # fmt: skip
    return StoredDocument(**(values | changes))


def test_a_document_is_kept_with_its_page_and_terms_and_replaced_whole(store: Store) -> None:
    store.put_document(document(), b"<html>a</html>", {"quince": 2, "tree": 1})
    store.put_document(document("/notes/b.md", title="B"), b"<html>b</html>", {"tree": 4})
    rows = store.stored_documents(["/notes/a.md", "/notes/b.md", "/notes/none.md"])
    assert set(rows) == {"/notes/a.md", "/notes/b.md"}
    a, b = rows["/notes/a.md"], rows["/notes/b.md"]
    assert (a.title, a.terms, a.reason) == ("A", 3, None)
    assert store.document_pages([a.id, b.id]) == {a.id: b"<html>a</html>", b.id: b"<html>b</html>"}
    assert store.term_counts(["tree", "quince", "absent"]) == {
        "tree": {a.id: 1, b.id: 4}, "quince": {a.id: 2},
    }  # fmt: skip
    # Read again after a change: the old terms go with the old row.
    store.put_document(document(sha256="h2", terms=1), b"<html>a2</html>", {"medlar": 1})
    renewed = store.stored_documents(["/notes/a.md"])["/notes/a.md"]
    assert store.term_counts(["quince", "medlar"]) == {"medlar": {renewed.id: 1}}
    assert store.document_pages([renewed.id]) == {renewed.id: b"<html>a2</html>"}


def test_a_failure_keeps_its_reason_and_no_page(store: Store) -> None:
    store.put_document(document(reason="/notes/a.md: encrypted", terms=0), None, {})
    row = store.stored_documents(["/notes/a.md"])["/notes/a.md"]
    assert row.reason == "/notes/a.md: encrypted"
    assert store.document_pages([row.id]) == {}


def test_touching_changes_only_size_and_time(store: Store) -> None:
    store.put_document(document(), b"<html>a</html>", {"tree": 1})
    store.touch_document("/notes/a.md", 11, 99)
    row = store.stored_documents(["/notes/a.md"])["/notes/a.md"]
    assert (row.size, row.mtime_ns, row.sha256) == (11, 99, "h1")
    assert store.term_counts(["tree"]) == {"tree": {row.id: 1}}


def test_clear_forgets_documents_and_their_terms(store: Store) -> None:
    store.put_document(document(), b"<html>a</html>", {"tree": 1})
    store.clear()
    assert store.stats()["documents"] == store.stats()["document_terms"] == 0


def test_a_file_made_before_documents_replays_and_upgrades_when_written(path: Path) -> None:
    conn = sqlite3.connect(path)
    for statement in UPGRADES[0]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with Store.open(path, readonly=True) as old:  # a recording of an older release
        assert old.stats()["documents"] == 0 and old.get_page("https://a.example/") is None
    assert sql(path, "PRAGMA user_version") == [(1,)]
    with Store.open(path) as store:
        store.put_document(document(), b"<html>a</html>", {"tree": 1})
    assert sql(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
