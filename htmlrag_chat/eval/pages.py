"""A dataset's page files: inside the folder they are named from, regular files, read
without blocking.

Datasets and pools come from other people. A page named ``/home/me/.aws/credentials`` or
``../../.ssh/id_rsa``, or a pool's ``x.html`` that is a link to either, would be read as a
page, kept in the cache and sent to the reader (``eval answers``, maybe a remote server).
So every page file must resolve, links followed, inside its folder (the dataset's,
``--pages-dir`` or ``--pool``): anything else is an ``InputError`` (exit 3) naming it. A
FIFO or a device named ``*.html`` would block the read or never end it: a page is opened
without waiting and without following a last link, and is read only when the descriptor
opened is a regular file, so a file swapped for something else after the check is refused
too.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.html.limits import MAX_PAGE_BYTES, check_page_size

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


def inside(folder: Path, path: Path | str, where: str) -> Path:
    """The real path of ``path`` (relative to ``folder``, or absolute) when it resolves
    inside ``folder``; an ``InputError`` that ``where`` begins otherwise."""
    root = os.path.realpath(folder)
    try:
        real = os.path.realpath(folder / path)
    except ValueError:  # a NUL in the name
        raise InputError(f"{where}: page file {shown_path(path)} is not a file name") from None
    if os.path.commonpath((root, real)) != root:
        raise InputError(
            f"{where}: page file {shown_path(path)} is outside {shown_path(folder)}, the folder "
            "its pages must be in"
        )
    return Path(real)


def is_page_file(path: Path) -> bool:
    """Whether ``path`` (a real path) is a regular file, without opening it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_page(path: Path) -> bytes:
    """The bytes of the regular file at ``path`` (a real path, from ``inside``), at most the
    page cap; an ``InputError`` naming it for anything else (a link, a FIFO, a device, a
    folder, missing, over the cap)."""
    name = shown_path(path)
    try:
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise InputError(f"{name}: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise InputError(f"{name}: not a regular file")
        try:
            data = file.read(MAX_PAGE_BYTES + 1)
        except OSError as error:
            raise InputError(f"{name}: {error.strerror or error}") from None
    check_page_size(name, len(data))
    return data
