"""Local documents in the cache file: each file's cleaned page and the BM25 terms of its text.

A row is keyed by the file's real path and holds what decides whether the file must be read
again: its size and modification time (checked without reading it), its content's hash
(a file touched but not changed is not converted again) and the version of the conversion
that made the row. A file that could not be used keeps its row too, with the reason and no
page, so a broken PDF is not parsed again on every question until it changes.

The terms (``lexical.terms`` of the visible text, with their counts) are stored per document
so that the documents a question reads are chosen by BM25 over these rows alone: no file
and no page is read for the choice, however large the folder.

A path is a key as its text (``path_key``), but a file name need not be UTF-8 (``caf\xe9``
from an old archive), and such a path, which Python holds with lone surrogates, cannot be
SQLite text: it is keyed by its ``file://`` URI instead, whose percent-escapes keep every
byte, and which cannot be the key of another file, since those are absolute paths. A
modification time is held as SQLite holds integers (``storable_mtime``): one past 2262 is
kept as the largest, so the row never claims to know it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from htmlrag_chat.store.connection import Connection

_KEYS_PER_QUERY = 500  # below SQLite's limit on bound parameters
_MOST, _LEAST = 2**63 - 1, -(2**63)  # SQLite's integers: nanoseconds past 2262 or before 1677


def path_key(path: Path) -> str:
    """The key of a file's row: its path, or for a path that is not UTF-8 its file URI."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return path.as_uri()
    return text


def storable_mtime(mtime_ns: int) -> int:
    """A modification time as a row holds it: within SQLite's integers."""
    return min(max(mtime_ns, _LEAST), _MOST)


@dataclass(frozen=True)
class StoredDocument:
    """A ``documents`` row without its page (``page`` reads that)."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    version: int
    kind: str
    title: str
    reason: str | None  # why the file could not be used; None when it has a page
    terms: int  # BM25 terms in its text: its length for BM25
    id: int = 0


class DocumentTables(Connection):
    """The document tables of the store; ``Store`` gives them their connection."""

    def stored_documents(self, paths: Sequence[str]) -> dict[str, StoredDocument]:
        """The rows held for these paths, by path (a path never read is missing)."""
        found = {}
        for chunk in _chunks(paths):
            rows = self._rows(
                "SELECT id, path, size, mtime_ns, sha256, version, kind, title, reason, terms"
                f" FROM documents WHERE path IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            for row in rows:
                found[row["path"]] = StoredDocument(**row)
        return found

    def put_document(
        self, document: StoredDocument, page: bytes | None, counts: Mapping[str, int]
    ) -> None:
        """Keep a file's row, its page (None: it could not be used) and its terms' counts,
        in place of what was held for its path, in one transaction."""
        document = replace(document, mtime_ns=storable_mtime(document.mtime_ns))
        record = asdict(document) | {"html": page, "read_at": time.time()}
        del record["id"]
        with self.transaction():
            self._db.execute("DELETE FROM documents WHERE path = ?", [document.path])
            identity = self._db.table("documents").insert(record).last_pk
            self._db.conn.executemany(
                "INSERT INTO document_terms (term, document, count) VALUES (?, ?, ?)",
                [(term, identity, count) for term, count in counts.items()],
            )

    def touch_document(self, path: str, size: int, mtime_ns: int) -> None:
        """A file whose content is what the row holds got a new size or time (touched,
        copied back): only those change."""
        with self.transaction():
            self._db.execute(
                "UPDATE documents SET size = ?, mtime_ns = ? WHERE path = ?",
                [size, storable_mtime(mtime_ns), path],
            )

    def document_pages(self, ids: Sequence[int]) -> dict[int, bytes]:
        """The cleaned pages of these documents, by id (those that have one)."""
        found: dict[int, bytes] = {}
        for chunk in _chunks(ids):
            rows = self._rows(
                f"SELECT id, html FROM documents WHERE id IN ({', '.join('?' * len(chunk))})"
                " AND html IS NOT NULL",
                chunk,
            )
            found.update((row["id"], row["html"]) for row in rows)
        return found

    def term_counts(self, terms: Iterable[str]) -> dict[str, dict[int, int]]:
        """For each term, the documents holding it and how often (by document id)."""
        found: dict[str, dict[int, int]] = {}
        for chunk in _chunks(sorted(set(terms))):
            rows = self._rows(
                "SELECT term, document, count FROM document_terms"
                f" WHERE term IN ({', '.join('?' * len(chunk))})",
                chunk,
            )
            for row in rows:
                found.setdefault(row["term"], {})[row["document"]] = row["count"]
        return found


def _chunks(items: Sequence[object]) -> Iterable[list[object]]:
    for start in range(0, len(items), _KEYS_PER_QUERY):
        yield list(items[start : start + _KEYS_PER_QUERY])
