"""The cache file: one SQLite database in WAL mode, one connection per ``Store``.

The web cache (``webcache.py``) and the conversations (``conversations.py``) share the file
and its one connection (``connection.py``, where transactions are explained). The schema
lives in ``schema.py``; ``PRAGMA user_version`` says how many of its steps a file has had,
so a newer release appends a step and older files catch up when opened. Anything SQLite
says about a damaged, foreign or locked file becomes a one-line ``StoreError``
(``files.py``).
"""

from __future__ import annotations

from pathlib import Path

from sqlite_utils import Database

from htmlrag_chat.base.paths import expand_user, shown_path
from htmlrag_chat.store.conversations import ConversationTables
from htmlrag_chat.store.documents import DocumentTables
from htmlrag_chat.store.files import StoreError, connect, default_cache_path, translate, what_to_do
from htmlrag_chat.store.schema import (
    CACHE_TABLES,
    READ_ONLY_SINCE,
    SCHEMA_VERSION,
    TABLES,
    UPGRADES,
)
from htmlrag_chat.store.webcache import WebCache

__all__ = ["SCHEMA_VERSION", "Store", "StoreError", "default_cache_path"]


class Store(WebCache, DocumentTables, ConversationTables):
    """One connection to one cache file; use it from one thread (the event loop's).

    The web cache's methods come from ``WebCache``, the local documents' from
    ``DocumentTables``, the conversations' from ``ConversationTables``; this class opens,
    upgrades and maintains the file.
    """

    @classmethod
    def open(cls, path: Path | str, *, readonly: bool = False) -> Store:
        """Open (and, unless ``readonly``, create or upgrade) the cache at ``path``."""
        path = expand_user(path)
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

    # -- maintenance

    def stats(self) -> dict[str, int]:
        """Rows per table, and ``bytes``: the file and its write-ahead log on disk."""
        present = set(self._db.table_names())  # a read-only file may predate a table
        counts = {
            table: self._rows(f"SELECT count(*) AS n FROM {table}")[0]["n"] if table in present
            else 0
            for table in TABLES
        }  # fmt: skip
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
        report = [row["quick_check"] for row in self._rows("PRAGMA quick_check")]
        if report != ["ok"]:
            # SQLite reports each problem on a line of its own, some rows holding several:
            # the first one says enough, the count says how bad.
            problems = [line for row in report for line in str(row).splitlines()]
            problems = [line for line in problems if not line.startswith("***")] or ["?"]
            more = f" and {len(problems) - 1} more problems" if len(problems) > 1 else ""
            advice = what_to_do(self.readonly)
            raise StoreError(
                f"cannot use the cache {shown_path(self.path)}: damaged "
                f"({problems[0].strip()}{more}); {advice}"
            )

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
                f"{shown_path(self.path)} is an SQLite file but not an htmlrag-chat cache; pass "
                "another --cache"
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
                f"{shown_path(self.path)} was written by a newer htmlrag-chat (schema {version}, "
                f"this one knows {SCHEMA_VERSION}); upgrade htmlrag-chat or pass another --cache"
            )
        if version < (READ_ONLY_SINCE if self.readonly else SCHEMA_VERSION):
            raise StoreError(
                f"{shown_path(self.path)} needs a schema upgrade (version {version} of "
                f"{SCHEMA_VERSION}); open it once without read-only"
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
