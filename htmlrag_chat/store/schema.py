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

# Local documents (``--docs``): each file's cleaned page by its real path, with the size,
# modification time and content hash that say whether it must be read again, or why it
# could not be used (``html`` NULL); and the BM25 terms of its text (``terms``: how many),
# so that choosing the documents for a question reads no file and no page.
_V2 = (
    """CREATE TABLE documents (
        id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL, sha256 TEXT NOT NULL, version INTEGER NOT NULL,
        kind TEXT NOT NULL, title TEXT NOT NULL, html BLOB, reason TEXT,
        terms INTEGER NOT NULL, read_at REAL NOT NULL)""",
    """CREATE TABLE document_terms (
        term TEXT NOT NULL,
        document INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        count INTEGER NOT NULL, PRIMARY KEY (term, document)) WITHOUT ROWID""",
    "CREATE INDEX document_terms_by_document ON document_terms(document)",
)

# Step n brings a file from user_version n to n + 1. Append; never edit a released step.
UPGRADES: tuple[tuple[str, ...], ...] = (_V1, _V2)
SCHEMA_VERSION = len(UPGRADES)
# A file opened read-only (a replayed recording) cannot be upgraded; it is read as it is
# when it has at least this version, since the steps after it add only tables a read-only
# file is never asked for (a replay keeps documents in the side file of derived artefacts).
READ_ONLY_SINCE = 1

# What ``clear`` empties (a table before those it refers to).
CACHE_TABLES = ("searches", "pages", "derived", "embeddings", "document_terms", "documents")
TABLES = (*CACHE_TABLES, "conversations", "messages", "answers")
