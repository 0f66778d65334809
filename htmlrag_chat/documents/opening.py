"""Every descriptor opened on the user's folders: without following a link, without
blocking, and checked as opened.

The rule that nothing inside a folder leads out of it is decided when the folder is listed
(``walk.py``), but a file or folder may be swapped for a link between the listing and the
reading: a folder of 600 notes takes seconds to read, and a plain ``open()`` would follow
the link and read whatever it names. So each folder and file is opened with ``O_NOFOLLOW``
(a link in its place is refused, not followed) and ``O_NONBLOCK`` (a pipe swapped in
opens at once instead of waiting for a writer), then checked through the descriptor
itself, which cannot change under us: of the type the listing saw, the same file the
listing saw (device and inode: a folder further up swapped for a link leads to another
one), and, where the system says where an open file is (Linux's ``/proc/self/fd``, macOS's
``F_GETPATH``), inside the folder it was found in. Anything else is an ``InputError``
naming the path, and the file is tried again on the next question.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.types import BY_KIND
from htmlrag_chat.html.limits import read_capped

if TYPE_CHECKING:  # walk.py opens its folders with ``open_checked``
    from htmlrag_chat.documents.walk import FoundFile

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_FOLDER_FLAGS = _FLAGS | os.O_DIRECTORY
_LINK_ERRORS = (errno.ELOOP, errno.EMLINK)  # O_NOFOLLOW met a link (EMLINK on FreeBSD)


def read_document(file: FoundFile) -> bytes:
    """The file's bytes, opened and checked as above, at most the cap of its type (a PDF
    carries fonts and images, so its cap is larger: see ``types.py``)."""
    limit = BY_KIND[file.kind].cap
    descriptor = open_checked(file.path, file.root, file.identity, folder=False)
    name = shown_path(file.path)
    try:
        with os.fdopen(descriptor, "rb") as stream:
            return read_capped(stream, name, limit)
    except OSError as error:
        raise InputError(f"{name}: {error.strerror or error}") from None


def open_checked(path: Path, root: Path, identity: tuple[int, int] | None, folder: bool) -> int:
    """A descriptor on ``path`` (a folder when ``folder``, else a regular file) that lies
    inside ``root`` and, when ``identity`` is given, is the file it names (device, inode).
    The caller closes it."""
    name = shown_path(path)
    try:
        descriptor = os.open(path, _FOLDER_FLAGS if folder else _FLAGS)
    except OSError as error:
        if error.errno in _LINK_ERRORS:
            raise InputError(f"{name}: a link now, not followed") from None
        if folder and error.errno == errno.ENOTDIR:
            raise InputError(f"{name}: not a folder now") from None
        raise InputError(f"{name}: {error.strerror or error}") from None
    try:
        _check(descriptor, root, identity, folder)
    except InputError as error:
        os.close(descriptor)
        raise InputError(f"{name}: {error}") from None
    return descriptor


def _check(descriptor: int, root: Path, identity: tuple[int, int] | None, folder: bool) -> None:
    info = os.fstat(descriptor)
    if not folder and not stat.S_ISREG(info.st_mode):
        raise InputError("not a regular file now (a pipe, a device or a socket)")
    if identity is not None and (info.st_dev, info.st_ino) != identity:
        raise InputError("replaced since the folder was listed; tried again next time")
    where = opened_path(descriptor)
    if where is not None and where != root and not where.is_relative_to(root):
        raise InputError(f"lies outside {shown_path(root)} now, not read")


def opened_path(descriptor: int) -> Path | None:
    """Where the system says an open file is, or None where it cannot say."""
    try:
        return Path(os.readlink(f"/proc/self/fd/{descriptor}"))
    except OSError:
        pass
    get_path = getattr(fcntl, "F_GETPATH", None)  # macOS
    if get_path is None:
        return None
    try:
        found = fcntl.fcntl(descriptor, get_path, bytes(1024))
    except OSError:
        return None
    return Path(os.fsdecode(found.rstrip(b"\0")))
