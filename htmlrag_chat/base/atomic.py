"""Every file the tool writes over (an export, a cleaned page, a conversation, a report) is
written here, so that no failure or refusal ever costs the user a file.

The text goes to a temporary file in the target's folder, is flushed to disk, and replaces
the target in one ``os.replace``: a full disk, a crash or a failed export leaves the old
file as it was (opening the target with "w" truncates it first, which is how an export onto
the cache file itself used to lose the cache). An output that is one of the command's
inputs (the same file, also by another name: a symbolic or hard link) is refused before
anything is written, and a symbolic link in the output's place is replaced, never written
through to whatever it points at, unless the caller says the link is the user's way of
naming the file (``through_links``: the settings file, which dotfiles managers link): then
the file the link names is replaced the same way, and the link stays.

A file a command writes because the user named it (``cache export --jsonl``, ``eval --out``,
``eval answers --out``: ``output_file``) follows the rules of one writer: an existing file is
written over only with ``--force``, a link is written through to the file it names (the
user's way of naming it), and anything but a regular file there (a device such as
``/dev/null``, a FIFO, a socket, a folder) is refused, never replaced by a regular file.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.paths import shown_path


def check_output(path: Path, inputs: Iterable[Path | str] = ()) -> None:
    """Refuse ``path`` as an output when it is a folder or the same file as an input."""
    if path.is_dir():
        raise UserError(f"cannot write {shown_path(path)}: it is a folder")
    for given in inputs:
        if _same_file(path, Path(given)):
            raise UserError(
                f"refusing to write {shown_path(path)}: it is the input {shown_path(given)}"
            )


@contextmanager
def atomic_output(
    path: Path,
    inputs: Iterable[Path | str] = (),
    new_mode: int | None = None,
    mode: int | None = None,
    through_links: bool = False,
) -> Iterator[IO[bytes]]:
    """A binary file that becomes ``path`` when the block ends without an error, and is
    removed when it does not; ``path`` is left as it was until then. A new file gets
    ``new_mode`` (default: what the umask gives), a replaced one keeps its permissions;
    ``mode`` sets them either way. With ``through_links``, a symbolic link at ``path`` stays
    and the file it names (through every link) is the one replaced."""
    path = Path(os.path.realpath(path)) if through_links else Path(path)
    check_output(path, inputs)
    folder = path.parent
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=folder)
    except OSError as error:
        raise UserError(f"cannot write {shown_path(path)}: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, _mode_for(path, new_mode) if mode is None else mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(folder)


def write_text(
    path: Path,
    text: str,
    inputs: Iterable[Path | str] = (),
    new_mode: int | None = None,
    mode: int | None = None,
    through_links: bool = False,
) -> None:
    """Write ``text`` as UTF-8 to ``path`` atomically (``atomic_output``'s options); an OS
    failure is one UserError."""
    try:
        with atomic_output(path, inputs, new_mode, mode, through_links) as file:
            file.write(text.encode("utf-8"))
    except OSError as error:
        raise UserError(f"cannot write {shown_path(path)}: {error.strerror or error}") from None


def check_replaceable(path: Path, force: bool) -> None:
    """Refuse ``path`` as a file the user named for an output, before any work: the file
    its links lead to must be a regular file, or not exist yet; an existing one is written
    over only with ``force``."""
    try:
        mode = os.stat(path).st_mode  # through links: the file they name
    except FileNotFoundError:  # nothing there yet, or a link to nothing yet: created
        return
    except OSError as error:
        raise UserError(f"cannot write {shown_path(path)}: {error.strerror or error}") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"cannot write {shown_path(path)}: it is a folder")
    if not stat.S_ISREG(mode):
        raise UserError(f"refusing to write {shown_path(path)}: it is not a regular file")
    if not force:
        raise UserError(f"{shown_path(path)} exists: --force writes over it")


@contextmanager
def output_file(
    path: Path, inputs: Iterable[Path | str] = (), force: bool = False
) -> Iterator[IO[bytes]]:
    """``atomic_output`` for a file the user named for a command's output: checked by
    ``check_replaceable`` (again, however long the work before took), written through
    links; an OS failure is one UserError."""
    check_replaceable(path, force)
    try:
        with atomic_output(path, inputs, through_links=True) as file:
            yield file
    except OSError as error:
        raise UserError(f"cannot write {shown_path(path)}: {error.strerror or error}") from None


def _same_file(output: Path, given: Path) -> bool:
    """Whether writing ``output`` would change ``given``: the same inode, whichever links
    lead there, or the same path (a symbolic link to nowhere yet)."""
    try:
        return os.path.samefile(output, given)
    except OSError:  # one of them does not exist (yet)
        return os.path.abspath(output) == os.path.abspath(given)


def _mode_for(path: Path, new_mode: int | None) -> int:
    """The file's permissions: those of the file replaced (not of a link's target), else
    ``new_mode``, else what a new file gets under the umask."""
    fresh = _new_file_mode() if new_mode is None else new_mode
    try:
        return path.lstat().st_mode & 0o777 if not path.is_symlink() else fresh
    except OSError:
        return fresh


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform lets a folder be opened)."""
    with contextlib.suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
