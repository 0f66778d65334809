"""The cache file: one SQLite database in WAL mode, one connection per ``Store``.

Every write is one short transaction (``BEGIN IMMEDIATE``, so a second process waits for the
write lock instead of failing half-way) and never spans an ``await``: asyncio code calls the
store directly from the event-loop thread, and each call commits before control returns.
The schema lives in ``_UPGRADES``; ``PRAGMA user_version`` says how many of its steps a file
has had, so a newer release appends a step and older files catch up when opened. Anything
SQLite says about a damaged, foreign or locked file becomes a one-line ``StoreError``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs
from sqlite_utils import Database

from htmlrag_chat.errors import EXIT_STORE, UserError
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

_V1 = (
    """CREATE TABLE searches (
        query TEXT NOT NULL, region TEXT NOT NULL, safesearch TEXT NOT NULL,
        backend TEXT NOT NULL, results TEXT NOT NULL, searched_at REAL NOT NULL,
        PRIMARY KEY (query, region, safesearch))""",
    """CREATE TABLE pages (
        url TEXT PRIMARY KEY, outcome TEXT NOT NULL, reason TEXT, final_url TEXT,
        status INTEGER, content_type TEXT, charset TEXT, headers TEXT NOT NULL, body BLOB,
        bytes INTEGER NOT NULL, ms REAL NOT NULL, fetched_at REAL NOT NULL)""",
    """CREATE TABLE derived (
        kind TEXT NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL, created_at REAL NOT NULL,
        PRIMARY KEY (kind, key))""",
    """CREATE TABLE embeddings (
        model TEXT NOT NULL, key TEXT NOT NULL, vector BLOB NOT NULL,
        PRIMARY KEY (model, key))""",
    """CREATE TABLE conversations (
        id INTEGER PRIMARY KEY, title TEXT NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY,
        conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role TEXT NOT NULL, content TEXT NOT NULL, created_at REAL NOT NULL)""",
    "CREATE INDEX messages_by_conversation ON messages(conversation_id)",
    """CREATE TABLE answers (
        id INTEGER PRIMARY KEY,
        message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        reader TEXT NOT NULL, text TEXT NOT NULL, sources TEXT NOT NULL,
        citations TEXT NOT NULL, flags TEXT NOT NULL, created_at REAL NOT NULL)""",
    "CREATE INDEX answers_by_message ON answers(message_id)",
)

# Step n brings a file from user_version n to n + 1. Append; never edit a released step.
_UPGRADES: tuple[tuple[str, ...], ...] = (_V1,)
SCHEMA_VERSION = len(_UPGRADES)

CACHE_TABLES = ("searches", "pages", "derived", "embeddings")  # what ``clear`` empties
TABLES = (*CACHE_TABLES, "conversations", "messages", "answers")

_VECTOR = np.dtype("<f4")  # little-endian float32, so a cache file moves between machines
_KEYS_PER_QUERY = 500  # below SQLite's limit on bound parameters


class StoreError(UserError):
    """The cache file cannot be used: damaged, foreign, newer, locked or missing."""

    exit_code = EXIT_STORE


def default_cache_path() -> Path:
    """``$HTMLRAG_CHAT_CACHE``, else ``cache.sqlite3`` in the user's cache directory."""
    override = os.environ.get("HTMLRAG_CHAT_CACHE")
    if override:
        return Path(override).expanduser()
    return platformdirs.user_cache_path("htmlrag-chat") / "cache.sqlite3"


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
        with _translate(path, readonly):
            store = cls(path, readonly, Database(_connect(path, readonly), execute_plugins=False))
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
        with _translate(self.path, self.readonly):
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
        """The results last stored for these settings (None: any value, newest first, as a
        replay wants: recordings carry no settings); None if missing or too old."""
        rows = self._rows(
            "SELECT results, searched_at FROM searches WHERE query = ?"
            " AND (? IS NULL OR region = ?) AND (? IS NULL OR safesearch = ?)"
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
            raise StoreError(
                f"cannot use the cache {self.path}: damaged ({problems[0]}); {_hint(self.readonly)}"
            )

    def vacuum(self) -> None:
        """Rebuild the file without free pages, and fold the log back in so the disk shrinks."""
        with _translate(self.path, self.readonly):
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
            for step in _UPGRADES[version:]:
                for statement in step:
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _user_version(self) -> int:
        return self._db.execute("PRAGMA user_version").fetchone()[0]

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with _translate(self.path, self.readonly):
            return list(self._db.query(sql, params))

    def _touch(self, where: str, value: int, now: float, missing: str) -> None:
        """Mark a conversation active; ``missing`` is the error when no row matches."""
        cursor = self._db.execute(
            f"UPDATE conversations SET updated_at = ? WHERE {where}", [now, value]
        )
        _require(cursor, missing)


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    if path.is_dir():
        raise StoreError(f"the cache {path} is a folder, not a file; pass another file")
    if readonly:
        if not path.is_file():
            raise StoreError(f"no cache at {path}; record one first or pass another file")
        uri = f"{path.resolve().as_uri()}?mode=ro"
        if not os.access(path.parent, os.W_OK) and not _has_log(path):
            # A folder we cannot write to (a read-only mount, someone else's recording):
            # SQLite cannot create the lock file it reads a WAL database with. With no log
            # to fold in, the file alone is the whole database, and nobody can change it
            # from here: read it as immutable.
            uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(f"cannot create the cache {path}: {error.strerror}") from error
    return sqlite3.connect(path)


def _has_log(path: Path) -> bool:
    """Whether a write-ahead log beside the file holds commits not yet in the file."""
    log = path.with_name(path.name + "-wal")
    return log.is_file() and log.stat().st_size > 0


@contextmanager
def _translate(path: Path, readonly: bool) -> Iterator[None]:
    """SQLite's complaints about the file become a one-line StoreError naming it.

    Integrity and programming errors are bugs in our SQL, not the file's fault: they pass.
    """
    try:
        yield
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError):
        raise
    except sqlite3.DatabaseError as error:
        reason = str(error)
        if "locked" in reason or "busy" in reason:
            hint = "another htmlrag-chat is writing to it; try again"
        elif "readonly" in reason:
            hint = "it was opened read-only, or its file or folder is not writable"
        elif readonly and "unable to open" in reason and not os.access(path.parent, os.W_OK):
            hint = (
                "its write-ahead log can only be read where the folder is writable: copy the "
                "file with its -wal file to such a folder (they are left as they are)"
            )
        else:
            hint = _hint(readonly)
        raise StoreError(f"cannot use the cache {path}: {reason}; {hint}") from error


def _hint(readonly: bool) -> str:
    """What to do about a file that cannot be used. Opened read-only it may be a recording
    someone wants to keep, so it is never suggested to move it out of the way."""
    if readonly:
        return "it is left as it is; pass another file"
    return "move it away or pass another --cache"


def _expired(stored_at: float, max_age: float | None) -> bool:
    return max_age is not None and time.time() - stored_at > max_age


def _require(cursor: sqlite3.Cursor, missing: str) -> None:
    if cursor.rowcount == 0:
        raise StoreError(missing)


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
