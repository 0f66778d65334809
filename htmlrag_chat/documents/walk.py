"""The documents under the paths a user gives: each a file, or a folder read recursively.

A path the user names is taken as named: a link given as ``--docs`` is followed, since it
was given on purpose, and a path that is missing, of an unread type or not a regular file
is an error. Inside a folder nothing may lead out of it: a symbolic link is followed only
when its target lies inside the folder given (the file is then read once, under its real
path); a link that leads elsewhere is left out with one line saying so, and the way to read
its target is to give that target its own ``--docs``. Hidden entries (a name starting with
a dot: ``.git``, ``.obsidian``) are passed over, and so are devices, pipes and sockets,
which a read could block on. At most ``MAX_FILES`` documents are taken per question.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.extras import needs_extra
from htmlrag_chat.documents.types import PDF, READ, kind_of, type_name

MAX_FILES = 10_000  # documents per question: a folder larger than this is a mistake, or a disk


@dataclass(frozen=True)
class FoundFile:
    """A document found: its real path (links resolved), kind, size and modification time."""

    path: Path
    kind: str
    size: int
    mtime_ns: int


@dataclass
class Found:
    files: list[FoundFile] = field(default_factory=list)
    other_types: Counter[str] = field(default_factory=Counter)  # extension -> files left out
    problems: list[str] = field(default_factory=list)  # one line per entry not followed
    over: int = 0  # documents past ``MAX_FILES``, left out


def check_roots(paths: Sequence[str]) -> list[Path]:
    """The given paths resolved, each one a folder or a document of a type read (a PDF only
    with its extra installed); anything else is an error naming it, before any work."""
    roots = []
    for given in paths:
        path = Path(given).expanduser()
        try:
            info = path.stat()
        except FileNotFoundError:
            raise InputError(f"--docs {given}: no such file or folder") from None
        except OSError as error:
            raise InputError(f"--docs {given}: {error.strerror or error}") from None
        if not stat.S_ISDIR(info.st_mode):
            kind = kind_of(path)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"--docs {given}: not a regular file or a folder")
            if kind is None:
                raise InputError(f"--docs {given}: not a type this reads ({READ})")
            if kind == PDF:
                needs_extra("pdf", "reading PDF files")
        roots.append(path.resolve())
    return roots


def find_documents(roots: Sequence[Path]) -> Found:
    """Every document under ``roots`` (from ``check_roots``), each once, in path order."""
    found = Found()
    seen: set[Path] = set()
    for root in roots:
        if root.is_dir():
            _walk(root, found, seen)
        else:
            _add(root, root.stat(), found, seen)
    found.files.sort(key=lambda file: file.path)
    return found


def _walk(root: Path, found: Found, seen: set[Path]) -> None:
    folders = [root]
    visited = {root}
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError as error:
            found.problems.append(f"{folder}: cannot list the folder ({error.strerror or error})")
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = Path(entry.path)
            if entry.is_symlink():
                path = path.resolve()
                if not path.is_relative_to(root):
                    found.problems.append(
                        f"{entry.path}: a link out of {root} (to {path}), not followed; "
                        "give its target its own --docs to read it"
                    )
                    continue
            try:
                info = path.stat()
            except OSError as error:
                found.problems.append(f"{path}: {error.strerror or error}")
                continue
            if stat.S_ISDIR(info.st_mode):
                if path not in visited:
                    visited.add(path)
                    folders.append(path)
            elif stat.S_ISREG(info.st_mode):
                _add(path, info, found, seen)
            # devices, pipes and sockets are passed over: opening one may block


def _add(path: Path, info: os.stat_result, found: Found, seen: set[Path]) -> None:
    kind = kind_of(path)
    if kind is None:
        found.other_types[type_name(path)] += 1
    elif path not in seen:
        seen.add(path)
        if len(found.files) < MAX_FILES:
            found.files.append(FoundFile(path, kind, info.st_size, info.st_mtime_ns))
        else:
            found.over += 1
