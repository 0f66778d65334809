"""One connection to the cache file and its transactions, shared by the web cache
(``webcache.py``) and the conversations (``conversations.py``) that ``Store`` composes.

Every write is one short transaction (``BEGIN IMMEDIATE``, so a second process waits for the
write lock instead of failing half-way) and never spans an ``await``: asyncio code calls the
store directly from the event-loop thread, and each call commits before control returns.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlrag_chat.base.safety import one_line
from htmlrag_chat.store.files import translate

if (
    TYPE_CHECKING
):  # sqlite-utils (and the numpy it imports) loads with the store, not with the options
    from sqlite_utils import Database


@dataclass(eq=False)
class Connection:
    """The file, whether it is open read-only, and the one SQLite connection to it."""

    path: Path
    readonly: bool
    _db: Database = field(repr=False)
    # Where a row left out is reported (``skip_row``); commands print it as a note.
    notice: Callable[[str], None] = field(default=lambda text: print(text, file=sys.stderr))
    _skipped: set[str] = field(default_factory=set, repr=False)

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

    def skip_row(self, what: str, why: object) -> None:
        """Leave out a row this code cannot read (``rows.BadRow``), with one notice per row:
        one damaged row never sinks the question, the export or the history around it."""
        message = one_line(f"left out {what} of the cache {self.path}: {why}")  # rows are data
        if message not in self._skipped:
            self._skipped.add(message)
            self.notice(message)

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[dict[str, Any]]:
        with translate(self.path, self.readonly):
            return list(self._db.query(sql, params))
