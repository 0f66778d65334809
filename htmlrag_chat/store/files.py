"""The cache file on disk: where it is, how it is opened, and what SQLite says about it.

The cache holds the full text of the user's documents and every conversation, so it is its
owner's alone: a folder this creates for it is ``0700`` and a file ``0600``, made so before
SQLite opens it, since SQLite gives the write-ahead log and the shared-memory file the
permissions of the database file. A file or folder that is already there keeps its own.

A read-only open of a file in a folder nobody may write to (a recording on a read-only
mount) is opened as immutable when it has no write-ahead log to fold in, since SQLite could
not create the lock file it reads a WAL database with. Anything SQLite says about a damaged,
foreign or locked file becomes a one-line ``StoreError`` that says what to do; a file opened
read-only may be a recording someone keeps, so it is never suggested to move it away.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

from htmlrag_chat.base.errors import EXIT_STORE, UserError
from htmlrag_chat.base.paths import expand_user, shown_path

OWNER_ONLY_FOLDER = 0o700
OWNER_ONLY_FILE = 0o600
MEMORY = ":memory:"


class StoreError(UserError):
    """The cache file cannot be used: damaged, foreign, newer, locked or missing."""

    exit_code = EXIT_STORE


def default_cache_path() -> Path:
    """``$HTMLRAG_CHAT_CACHE``, else ``cache.sqlite3`` in the user's cache directory."""
    override = os.environ.get("HTMLRAG_CHAT_CACHE")
    if override:
        return expand_user(override, "HTMLRAG_CHAT_CACHE")
    return platformdirs.user_cache_path("htmlrag-chat") / "cache.sqlite3"


def connect(path: Path, readonly: bool) -> sqlite3.Connection:
    if path.is_dir():
        raise StoreError(f"the cache {shown_path(path)} is a folder, not a file; pass another file")
    if readonly:
        if not path.is_file():
            raise StoreError(
                f"no cache at {shown_path(path)}; record one first or pass another file"
            )
        uri = f"{path.resolve().as_uri()}?mode=ro"
        if not os.access(path.parent, os.W_OK) and not _has_log(path):
            # A folder we cannot write to (a read-only mount, someone else's recording):
            # SQLite cannot create the lock file it reads a WAL database with. With no log
            # to fold in, the file alone is the whole database, and nobody can change it
            # from here: read it as immutable.
            uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True)
    if str(path) != MEMORY:
        try:
            _create_private(path)
        except OSError as error:
            raise StoreError(
                f"cannot create the cache {shown_path(path)}: {error.strerror or error}"
            ) from error
    return sqlite3.connect(path)


def _create_private(path: Path) -> None:
    """The folders missing above ``path`` (``0700``) and an empty file at it (``0600``:
    SQLite takes an empty file for a new database), unless something is there already."""
    missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made meanwhile, by another htmlrag-chat
            os.mkdir(folder, OWNER_ONLY_FOLDER)
    with contextlib.suppress(FileExistsError):  # there already, or a link SQLite follows
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, OWNER_ONLY_FILE))


def _has_log(path: Path) -> bool:
    """Whether a write-ahead log beside the file holds commits not yet in the file."""
    log = path.with_name(path.name + "-wal")
    return log.is_file() and log.stat().st_size > 0


@contextmanager
def translate(path: Path, readonly: bool) -> Iterator[None]:
    """SQLite's complaints about the file become a one-line StoreError naming it.

    Integrity and programming errors are bugs in our SQL, not the file's fault: they pass.
    """
    try:
        yield
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError):
        raise
    except sqlite3.DatabaseError as error:
        reason = (str(error).splitlines() or ["unknown error"])[0]  # one line, whatever SQLite says
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
            hint = what_to_do(readonly)
        raise StoreError(f"cannot use the cache {shown_path(path)}: {reason}; {hint}") from error


def what_to_do(readonly: bool) -> str:
    """What to do about a file that cannot be used. Opened read-only it may be a recording
    someone wants to keep, so it is never suggested to move it out of the way."""
    if readonly:
        return "it is left as it is; pass another file"
    return "move it away or pass another --cache"
