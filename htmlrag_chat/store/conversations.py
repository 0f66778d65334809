"""The conversations: their questions (messages) and the answers each got.

They share the cache file with the web cache (``webcache.py``) but are the user's own record:
``Store.clear`` keeps them. Deleting a conversation cascades to its messages and answers.
"""

from __future__ import annotations

import json
import sqlite3
import time

from htmlrag_chat.store.connection import Connection
from htmlrag_chat.store.files import StoreError
from htmlrag_chat.store.rows import BadRow, answer_record

# What SQLite hands a Python function and takes back from it.
_SQLValue = str | bytes | int | float | None

# SQLite's INTEGER: an id outside it names no row (sqlite3 would raise OverflowError on it).
ROW_IDS = range(-(2**63), 2**63)


class ConversationTables(Connection):
    """The conversation tables of the store; ``Store`` gives them their connection."""

    def _insert(self, table: str, record: dict[str, object]) -> int:
        """Insert ``record``; its row id. sqlite-utils types ``last_pk`` for any primary key
        (None before an insert); these tables' keys are ``INTEGER PRIMARY KEY``."""
        row_id = self._db.table(table).insert(record).last_pk
        assert isinstance(row_id, int), f"{table} has an integer key"
        return row_id

    def new_conversation(self, title: str = "") -> int:
        now = time.time()
        record = {"title": title, "created_at": now, "updated_at": now}
        with self.transaction():
            return self._insert("conversations", record)

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
            return self._insert("messages", record)

    def save_question(
        self, conversation_id: int | None, question: str, *, title: str = ""
    ) -> tuple[int, int]:
        """Save a question as one transaction, first creating its conversation (titled
        ``title``) when ``conversation_id`` is None; returns (conversation, message) ids.

        The first half of an exchange: saved before the answer exists, so a stopped question
        stays in the history, and a failed write leaves no empty conversation behind. The
        answer follows with ``add_answer`` under the returned message id.
        """
        with self.transaction():
            if conversation_id is None:
                conversation_id = self.new_conversation(title)
            return conversation_id, self.add_message(conversation_id, "user", question)

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
            return self._insert("answers", record)

    def copy_conversations(self, source: ConversationTables) -> int:
        """Copy every conversation of ``source`` (with its messages and answers, ids kept)
        into this store, which must hold none yet: a replay's scratch history starts with
        the recording's conversations, so they can be read and followed up, while the
        recording itself stays read-only. Returns how many were copied."""
        with self.transaction():
            for table in ("conversations", "messages", "answers"):
                self._db.table(table).insert_all(source._db.table(table).rows)
        return self._db.table("conversations").count

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
        if conversation_id not in ROW_IDS:
            return None
        rows = self.conversation_summaries(only=conversation_id)
        return rows[0] if rows else None

    def messages(self, conversation_id: int) -> list[dict]:
        """A conversation's messages in order, each with its ``answers`` (empty if unknown).

        One query, so a message and its answers come from the same snapshot.
        """
        if conversation_id not in ROW_IDS:
            return []
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
                try:
                    message["answers"].append(answer_record(row))
                except BadRow as bad:
                    self.skip_row(f"answer {row['answer_id']}", bad)
        return list(messages.values())

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        _require_id(conversation_id)
        with self.transaction():
            cursor = self._db.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", [title, conversation_id]
            )
            _require(cursor, f"no conversation {conversation_id}")

    def delete_conversation(self, conversation_id: int) -> None:
        """Delete a conversation with its messages and their answers (foreign-key cascade)."""
        _require_id(conversation_id)
        with self.transaction():
            cursor = self._db.execute("DELETE FROM conversations WHERE id = ?", [conversation_id])
            _require(cursor, f"no conversation {conversation_id}")

    def _touch(self, where: str, value: int, now: float, missing: str) -> None:
        """Mark a conversation active; ``missing`` is the error when no row matches."""
        cursor = self._db.execute(
            f"UPDATE conversations SET updated_at = ? WHERE {where}", [now, value]
        )
        _require(cursor, missing)


def _require_id(conversation_id: int) -> None:
    if conversation_id not in ROW_IDS:
        raise StoreError(f"no conversation {conversation_id}")


def _require(cursor: sqlite3.Cursor, missing: str) -> None:
    if cursor.rowcount == 0:
        raise StoreError(missing)


def _casefold(text: _SQLValue) -> _SQLValue:
    """SQL ``casefold(x)``: Python's Unicode case folding (SQLite's own folds ASCII only)."""
    return text.casefold() if isinstance(text, str) else text
