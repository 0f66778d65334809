"""The cache file: one SQLite database in WAL mode, one connection per ``Store``.

Every write is one short transaction (``BEGIN IMMEDIATE``, so a second process waits for the
write lock instead of failing half-way) and never spans an ``await``: asyncio code calls the
store directly from the event-loop thread, and each call commits before control returns.
The schema lives in ``schema.py``; ``PRAGMA user_version`` says how many of its steps a file
has had, so a newer release appends a step and older files catch up when opened. Anything
SQLite says about a damaged, foreign or locked file becomes a one-line ``StoreError``
(``files.py``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from sqlite_utils import Database

from htmlrag_chat.store.files import StoreError, connect, default_cache_path, translate, what_to_do
from htmlrag_chat.store.schema import CACHE_TABLES, SCHEMA_VERSION, TABLES, UPGRADES
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

__all__ = ["SCHEMA_VERSION", "Store", "StoreError", "default_cache_path"]

_VECTOR = np.dtype("<f4")  # little-endian float32, so a cache file moves between machines
_KEYS_PER_QUERY = 500  # below SQLite's limit on bound parameters


@dataclass(eq=False)
class Store:
    """One connection to one cache file; use it from one thread (the event loop's)."""

    path: Path
    readonly: bool
    _db: Database = field(repr=False)

    @classmethod
    def open(cls, path: Path | str, *, readonly: bool = False) -> Store:
        """Open (and, unless ``readonly``, create or upgrade) the cache at ``path``."""
        path = Path(path).expanduser()
        with translate(path, readonly):
            store = cls(path, readonly, Database(connect(path, readonly), execute_plugins=False))
            try:
                store._prepare()
            except BaseException:
                store.close()
                raise
        return store

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one transaction; a nested one is a savepoint inside it.

        Never ``await`` inside: the write lock would be held while other tasks run.
        """
        conn = self._db.conn
        with translate(self.path, self.readonly):
            if conn.in_transaction:
                with self._db.atomic():
                    yield
                return
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

    # -- searches

    def put_search(
        self,
        query: str,
        results: Sequence[SearchResult],
        *,
        region: str = "",
        safesearch: str = "",
        backend: str = "",
    ) -> None:
        record = {
            "query": query,
            "region": region,
            "safesearch": safesearch,
            "backend": backend,
            "results": json.dumps([asdict(result) for result in results], ensure_ascii=False),
            "searched_at": time.time(),
        }
        with self.transaction():
            self._db.table("searches").upsert(record, pk=("query", "region", "safesearch"))

    def get_search(
        self,
        query: str,
        *,
        region: str | None = "",
        safesearch: str | None = "",
        max_age: float | None = None,
    ) -> list[SearchResult] | None:
        """The results last stored for these settings, newest first; None if missing or older
        than ``max_age``. None as a setting matches any value (a replay takes what was
        recorded), and a search stored without settings (an imported recording: the exchange
        format carries none) matches any settings, so it answers in record mode too."""
        rows = self._rows(
            "SELECT results, searched_at FROM searches WHERE query = ?"
            " AND ((region = '' AND safesearch = '')"
            " OR ((? IS NULL OR region = ?) AND (? IS NULL OR safesearch = ?)))"
            " ORDER BY searched_at DESC, rowid DESC LIMIT 1",
            [query, region, region, safesearch, safesearch],
        )
        if not rows or _expired(rows[0]["searched_at"], max_age):
            return None
        return [SearchResult(**item) for item in json.loads(rows[0]["results"])]

    def searches(self) -> list[tuple[str, list[SearchResult]]]:
        """Every stored search as (query, results), oldest first (recordings export these)."""
        rows = self._rows("SELECT query, results FROM searches ORDER BY searched_at, rowid")
        return [
            (row["query"], [SearchResult(**item) for item in json.loads(row["results"])])
            for row in rows
        ]

    # -- pages

    def put_page(self, result: FetchResult) -> None:
        """Store a download's outcome. A failure never replaces a good page: a site that is
        down for a moment must not cost the cache a page it had (checked inside the one
        statement, so two writers cannot race past it)."""
        record = asdict(result)
        del record["from_cache"], record["transient"]
        record["outcome"] = result.outcome.value
        record["headers"] = json.dumps(result.headers, ensure_ascii=False)
        updates = ", ".join(f"{column} = excluded.{column}" for column in record if column != "url")
        with self.transaction():
            self._db.execute(
                f"INSERT INTO pages ({', '.join(record)}) VALUES ({', '.join('?' * len(record))})"
                f" ON CONFLICT (url) DO UPDATE SET {updates}"
                " WHERE excluded.outcome = ? OR pages.outcome != ?",
                [*record.values(), Outcome.OK.value, Outcome.OK.value],
            )

    def get_page(self, url: str, *, max_age: float | None = None) -> FetchResult | None:
        """The page stored for this requested URL; None if missing or older than ``max_age``."""
        rows = self._rows("SELECT * FROM pages WHERE url = ?", [url])
        if not rows or _expired(rows[0]["fetched_at"], max_age):
            return None
        row = rows[0]
        row["outcome"] = Outcome(row["outcome"])
        row["headers"] = json.loads(row["headers"])
        return FetchResult(**row, from_cache=True)

    # -- derived artefacts (cleaned HTML and the like), by content hash

    def put_derived(self, kind: str, key: str, value: bytes) -> None:
        record = {"kind": kind, "key": key, "value": value, "created_at": time.time()}
        with self.transaction():
            self._db.table("derived").upsert(record, pk=("kind", "key"))

    def get_derived(self, kind: str, key: str) -> bytes | None:
        rows = self._rows("SELECT value FROM derived WHERE kind = ? AND key = ?", [kind, key])
        return rows[0]["value"] if rows else None

    # -- embeddings (the scoring.embed.EmbeddingCache protocol): 1-D float32 vectors

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = list(keys[start : start + _KEYS_PER_QUERY])
            marks = ", ".join("?" * len(chunk))
            rows = self._rows(
                f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *chunk],
            )
            for row in rows:
                found[row["key"]] = np.frombuffer(row["vector"], dtype=_VECTOR).astype(np.float32)
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        records = [
            {"model": model, "key": key, "vector": np.asarray(vector, dtype=_VECTOR).tobytes()}
            for key, vector in vectors.items()
        ]
        with self.transaction():
            self._db.table("embeddings").upsert_all(records, pk=("model", "key"))

    # -- conversations

    def new_conversation(self, title: str = "") -> int:
        now = time.time()
        record = {"title": title, "created_at": now, "updated_at": now}
        with self.transaction():
            return self._db.table("conversations").insert(record).last_pk

    def add_message(self, conversation_id: int, role: str, content: str) -> int:
        now = time.time()
        record = {
            "conversation_id": conversation_id,
            "role": role,
            "content": content,
            "created_at": now,
        }
        with self.transaction():
            self._touch("id = ?", conversation_id, now, f"no conversation {conversation_id}")
            return self._db.table("messages").insert(record).last_pk

    def add_answer(
        self,
        message_id: int,
        *,
        reader: str,
        text: str,
        sources: list[dict],
        citations: list[dict],
        flags: list[str],
    ) -> int:
        now = time.time()
        record = {
            "message_id": message_id,
            "reader": reader,
            "text": text,
            "sources": json.dumps(sources, ensure_ascii=False),
            "citations": json.dumps(citations, ensure_ascii=False),
            "flags": json.dumps(flags, ensure_ascii=False),
            "created_at": now,
        }
        with self.transaction():
            where = "id = (SELECT conversation_id FROM messages WHERE id = ?)"
            self._touch(where, message_id, now, f"no message {message_id}")
            return self._db.table("answers").insert(record).last_pk

    def conversations(self) -> list[dict]:
        """Every conversation, the most recently active first."""
        return self._rows(
            "SELECT id, title, created_at, updated_at FROM conversations"
            " ORDER BY updated_at DESC, id DESC"
        )

    def conversation_summaries(
        self, *, limit: int | None = None, search: str | None = None, only: int | None = None
    ) -> list[dict]:
        """Conversations, the most recently active first, each with ``turns`` (questions
        asked) and ``reader`` (the latest answer's, None before one); ``search`` keeps those
        whose title, questions or answers contain it, case-insensitively (Unicode casefold,
        so "STRASSE" finds "Straße"); ``only`` picks one conversation by id."""
        self._db.conn.create_function("casefold", 1, _casefold, deterministic=True)
        return self._rows(
            "SELECT c.id, c.title, c.created_at, c.updated_at,"
            " (SELECT count(*) FROM messages m"
            "  WHERE m.conversation_id = c.id AND m.role = 'user') AS turns,"
            " (SELECT a.reader FROM messages m JOIN answers a ON a.message_id = m.id"
            "  WHERE m.conversation_id = c.id ORDER BY a.id DESC LIMIT 1) AS reader"
            " FROM conversations c"
            " WHERE (:only IS NULL OR c.id = :only) AND (:text IS NULL"
            "  OR instr(casefold(c.title), :text) OR EXISTS (SELECT 1 FROM messages m"
            "   LEFT JOIN answers a ON a.message_id = m.id WHERE m.conversation_id = c.id"
            "   AND (instr(casefold(m.content), :text) OR instr(casefold(a.text), :text))))"
            " ORDER BY c.updated_at DESC, c.id DESC LIMIT :limit",
            {
                "only": only,
                "text": _casefold(search) if search else None,
                "limit": -1 if limit is None else limit,
            },
        )

    def conversation(self, conversation_id: int) -> dict | None:
        """One conversation's summary (as ``conversation_summaries`` gives it); None if there
        is no such conversation."""
        rows = self.conversation_summaries(only=conversation_id)
        return rows[0] if rows else None

    def messages(self, conversation_id: int) -> list[dict]:
        """A conversation's messages in order, each with its ``answers`` (empty if unknown).

        One query, so a message and its answers come from the same snapshot.
        """
        rows = self._rows(
            "SELECT m.id, m.role, m.content, m.created_at, a.id AS answer_id, a.reader, a.text,"
            " a.sources, a.citations, a.flags, a.created_at AS answered_at"
            " FROM messages m LEFT JOIN answers a ON a.message_id = m.id"
            " WHERE m.conversation_id = ? ORDER BY m.id, a.id",
            [conversation_id],
        )
        messages: dict[int, dict] = {}
        for row in rows:
            message = messages.setdefault(
                row["id"],
                {key: row[key] for key in ("id", "role", "content", "created_at")}
                | {"answers": []},
            )
            if row["answer_id"] is not None:
                message["answers"].append(_answer(row))
        return list(messages.values())

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        with self.transaction():
            cursor = self._db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", [title, conversation_id]
            )
            _require(cursor, f"no conversation {conversation_id}")

    def delete_conversation(self, conversation_id: int) -> None:
        """Delete a conversation with its messages and their answers (foreign-key cascade)."""
        with self.transaction():
            cursor = self._db.execute("DELETE FROM conversations WHERE id = ?", [conversation_id])
            _require(cursor, f"no conversation {conversation_id}")

    # -- maintenance

    def stats(self) -> dict[str, int]:
        """Rows per table, and ``bytes``: the file and its write-ahead log on disk."""
        counts = {
            table: self._rows(f"SELECT count(*) AS n FROM {table}")[0]["n"] for table in TABLES
        }
        files = (self.path, self.path.with_name(self.path.name + "-wal"))
        counts["bytes"] = sum(file.stat().st_size for file in files if file.exists())
        return counts

    def clear(self) -> None:
        """Forget everything fetched or computed; conversations stay."""
        with self.transaction():
            for table in CACHE_TABLES:
                self._db.execute(f"DELETE FROM {table}")

    def check(self) -> None:
        """Read every page of the file (``PRAGMA quick_check``), so that damage anywhere is
        found now: before ``cache import`` writes into a file that ``cache stats`` (or the
        next question) would then refuse."""
        problems = [row["quick_check"] for row in self._rows("PRAGMA quick_check")]
        if problems != ["ok"]:
            advice = what_to_do(self.readonly)
            raise StoreError(f"cannot use the cache {self.path}: damaged ({problems[0]}); {advice}")

    def vacuum(self) -> None:
        """Rebuild the file without free pages, and fold the log back in so the disk shrinks."""
        with translate(self.path, self.readonly):
            self._db.vacuum()
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # -- internals

    def _prepare(self) -> None:
        """Set up the connection, check the file is ours, and bring its schema up to date."""
        self._db.execute("PRAGMA foreign_keys = ON")
        version = self._user_version()
        if version == 0 and self._db.table_names():
            raise StoreError(
                f"{self.path} is an SQLite file but not an htmlrag-chat cache; pass another --cache"
            )
        if not self.readonly:
            self._db.enable_wal()
            # In WAL mode this survives a crashed process; only a power cut may lose the last
            # commits, which a cache can refetch.
            self._db.execute("PRAGMA synchronous = NORMAL")
            if version < SCHEMA_VERSION:
                self._upgrade()
                version = self._user_version()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer htmlrag-chat (schema {version}, this one"
                f" knows {SCHEMA_VERSION}); upgrade htmlrag-chat or pass another --cache"
            )
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} needs a schema upgrade (version {version} of {SCHEMA_VERSION});"
                " open it once without read-only"
            )

    def _upgrade(self) -> None:
        with self.transaction():
            # Read again under the write lock: another process may have upgraded meanwhile.
            version = self._user_version()
            if version >= SCHEMA_VERSION:
                return
            for step in UPGRADES[version:]:
                for statement in step:
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _user_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def _rows(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[dict[str, Any]]:
        with translate(self.path, self.readonly):
            return list(self._db.query(sql, params))

    def _touch(self, where: str, value: int, now: float, missing: str) -> None:
        """Mark a conversation active; ``missing`` is the error when no row matches."""
        cursor = self._db.execute(
            f"UPDATE conversations SET updated_at = ? WHERE {where}", [now, value]
        )
        _require(cursor, missing)


def _expired(stored_at: float, max_age: float | None) -> bool:
    return max_age is not None and time.time() - stored_at > max_age


def _require(cursor: sqlite3.Cursor, missing: str) -> None:
    if cursor.rowcount == 0:
        raise StoreError(missing)


def _casefold(text: object) -> object:
    """SQL ``casefold(x)``: Python's Unicode case folding (SQLite's own folds ASCII only)."""
    return text.casefold() if isinstance(text, str) else text


def _answer(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": row["answer_id"],
        "reader": row["reader"],
        "text": row["text"],
        "sources": json.loads(row["sources"]),
        "citations": json.loads(row["citations"]),
        "flags": json.loads(row["flags"]),
        "created_at": row["answered_at"],
    }
