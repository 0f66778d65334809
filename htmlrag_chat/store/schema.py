"""The cache file's tables, as numbered upgrade steps.

``PRAGMA user_version`` says how many steps a file has had, so a newer release appends a
step and older files catch up when opened (``Store._prepare``).
"""

from __future__ import annotations

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
UPGRADES: tuple[tuple[str, ...], ...] = (_V1,)
SCHEMA_VERSION = len(UPGRADES)

CACHE_TABLES = ("searches", "pages", "derived", "embeddings")  # what ``clear`` empties
TABLES = (*CACHE_TABLES, "conversations", "messages", "answers")
