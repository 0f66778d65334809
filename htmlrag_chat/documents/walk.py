"""The documents under the paths a user gives: each a file, or a folder read recursively.

A path the user names is taken as named: a link given as ``--docs`` is followed, since it
was given on purpose, and a path that is missing, of an unread type or not a regular file
is an error. Inside a folder nothing may lead out of it: a symbolic link is followed only
when its target lies inside the folder given (the file is then read once, under its real
path); a link that leads elsewhere is left out with one line saying so, and the way to read
its target is to give that target its own ``--docs``; a link in a loop (``a -> b -> a``,
or to itself) is left out with one line too. Hidden entries (a name starting with a dot:
``.git``, ``.obsidian``) are passed over, and so are devices, pipes and sockets, which a
read could block on. At most ``MAX_FILES`` documents are taken per question.

What the listing decided holds when the files are read: each folder is listed and each
file read through a descriptor checked as opened (``opening.py``), so a folder or file
swapped for a link meanwhile is not followed. Every path in a note is on one line
(``shown_path``): a file name may hold a newline.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import expand_user, shown_path
from htmlrag_chat.documents.opening import open_checked
from htmlrag_chat.documents.types import READ, kind_of, type_name, type_of
from htmlrag_chat.modelio.extras import needs_extra

MAX_FILES = 10_000  # documents per question: a folder larger than this is a mistake, or a disk


@dataclass(frozen=True)
class FoundFile:
    """A document found: its real path (links resolved), kind, size and modification time,
    the path it was found under (a folder given, or the file itself) and the file the
    listing saw (device, inode), which is the one it is read from (``opening.py``)."""

    path: Path
    kind: str
    size: int
    mtime_ns: int
    root: Path
    identity: tuple[int, int]


@dataclass
class Found:
    files: list[FoundFile] = field(default_factory=list)
    other_types: Counter[str] = field(default_factory=Counter)  # extension -> files left out
    problems: list[str] = field(default_factory=list)  # one line per entry not followed
    over: int = 0  # documents past ``MAX_FILES``, left out


def check_roots(paths: Sequence[str], option: str = "--docs") -> list[Path]:
    """The given paths resolved, each one a folder or a document of a type read (one that
    needs an extra, a PDF, only with it installed); anything else is an error naming it (as
    ``option`` gave it), before any work."""
    roots = []
    for given in paths:
        path = expand_user(given, option)
        name = f"{option} {shown_path(given)}"
        try:
            info = path.stat()
        except FileNotFoundError:
            raise InputError(f"{name}: no such file or folder") from None
        except OSError as error:
            raise InputError(f"{name}: {error.strerror or error}") from None
        if not stat.S_ISDIR(info.st_mode):
            found = type_of(path)
            if not stat.S_ISREG(info.st_mode):
                raise InputError(f"{name}: not a regular file or a folder")
            if found is None:
                raise InputError(f"{name}: not a type this reads ({READ})")
            if found.extra is not None:
                needs_extra(found.extra, f"reading {found.label} files")
        roots.append(path.resolve())
    return roots


def find_documents(roots: Sequence[Path]) -> Found:
    """Every document under ``roots`` (from ``check_roots``), each once, in path order."""
    found = Found()
    seen: set[Path] = set()
    for root in roots:
        try:
            info = root.stat()
        except OSError as error:  # gone since it was checked
            found.problems.append(f"{shown_path(root)}: {error.strerror or error}")
            continue
        if stat.S_ISDIR(info.st_mode):
            _walk(root, (info.st_dev, info.st_ino), found, seen)
        elif stat.S_ISREG(info.st_mode):
            _add(root, info, root, found, seen)
    found.files.sort(key=lambda file: file.path)
    return found


def _walk(root: Path, identity: tuple[int, int], found: Found, seen: set[Path]) -> None:
    """The documents under the folder ``root``, each folder listed through a descriptor
    opened as ``opening.py`` says (a folder swapped for a link is not listed)."""
    folders = [(root, identity)]
    visited = {root}
    while folders:
        folder, expected = folders.pop()
        try:
            entries = _listing(folder, root, expected)
        except InputError as error:
            found.problems.append(f"{error} (the folder is not listed)")
            continue
        for name, listed in entries:
            path = folder / name
            try:
                if isinstance(listed, OSError):
                    raise listed
                info = listed
                if stat.S_ISLNK(info.st_mode):
                    # Never raises: a loop is left unresolved, and the stat below says so.
                    path = Path(os.path.realpath(path))
                    if not path.is_relative_to(root):
                        found.problems.append(
                            f"{shown_path(folder / name)}: a link out of "
                            f"{shown_path(root)} (to {shown_path(path)}), not followed; "
                            "give its target its own --docs to read it"
                        )
                        continue
                    info = path.stat()
            except OSError as error:
                found.problems.append(_unusable(folder / name, error))
                continue
            if stat.S_ISDIR(info.st_mode):
                if path not in visited:
                    visited.add(path)
                    folders.append((path, (info.st_dev, info.st_ino)))
            elif stat.S_ISREG(info.st_mode):
                _add(path, info, root, found, seen)
            # devices, pipes and sockets are passed over: opening one may block


def _listing(
    folder: Path, root: Path, identity: tuple[int, int]
) -> list[tuple[str, os.stat_result | OSError]]:
    """The folder's entries by name, but hidden ones, each with what the folder says of it
    (a link as a link) or why it could not say, listed through a checked descriptor."""
    descriptor = open_checked(folder, root, identity, folder=True)
    try:
        with os.scandir(descriptor) as scan:
            names = sorted(entry.name for entry in scan if not entry.name.startswith("."))
        listed: list[tuple[str, os.stat_result | OSError]] = []
        for name in names:
            try:
                listed.append((name, os.stat(name, dir_fd=descriptor, follow_symlinks=False)))
            except OSError as error:
                listed.append((name, error))
        return listed
    except OSError as error:
        raise InputError(f"{shown_path(folder)}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)


def _unusable(path: Path, error: OSError) -> str:
    """One line on an entry that cannot be followed: a link that loops, or the system's
    words (a link to nowhere, no permission)."""
    if error.errno == errno.ELOOP:
        return f"{shown_path(path)}: a link in a loop (it leads back to itself), left out"
    return f"{shown_path(path)}: {error.strerror or error}"


def _add(path: Path, info: os.stat_result, root: Path, found: Found, seen: set[Path]) -> None:
    kind = kind_of(path)
    if kind is None:
        found.other_types[type_name(path)] += 1
    elif path not in seen:
        seen.add(path)
        if len(found.files) < MAX_FILES:
            identity = (info.st_dev, info.st_ino)
            found.files.append(
                FoundFile(path, kind, info.st_size, info.st_mtime_ns, root, identity)
            )
        else:
            found.over += 1
