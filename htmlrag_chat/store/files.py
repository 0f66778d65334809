"""The cache file on disk: where it is, how it is opened, and what SQLite says about it.

A read-only open of a file in a folder nobody may write to (a recording on a read-only
mount) is opened as immutable when it has no write-ahead log to fold in, since SQLite could
not create the lock file it reads a WAL database with. Anything SQLite says about a damaged,
foreign or locked file becomes a one-line ``StoreError`` that says what to do; a file opened
read-only may be a recording someone keeps, so it is never suggested to move it away.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import platformdirs

from htmlrag_chat.base.errors import EXIT_STORE, UserError


class StoreError(UserError):
    """The cache file cannot be used: damaged, foreign, newer, locked or missing."""

    exit_code = EXIT_STORE


def default_cache_path() -> Path:
    """``$HTMLRAG_CHAT_CACHE``, else ``cache.sqlite3`` in the user's cache directory."""
    override = os.environ.get("HTMLRAG_CHAT_CACHE")
    if override:
        return Path(override).expanduser()
    return platformdirs.user_cache_path("htmlrag-chat") / "cache.sqlite3"


def connect(path: Path, readonly: bool) -> sqlite3.Connection:
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
        raise StoreError(f"cannot use the cache {path}: {reason}; {hint}") from error


def what_to_do(readonly: bool) -> str:
    """What to do about a file that cannot be used. Opened read-only it may be a recording
    someone wants to keep, so it is never suggested to move it out of the way."""
    if readonly:
        return "it is left as it is; pass another file"
    return "move it away or pass another --cache"
