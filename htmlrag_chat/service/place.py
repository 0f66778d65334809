"""Where a user's service listens, and the checks that make it that user's alone.

The socket and the file that describes the service (its process, when it started, the
token a caller sends) live in a folder of the user's runtime directory
(``$XDG_RUNTIME_DIR/htmlrag-chat``, else ``htmlrag-chat-UID`` in the temporary directory).
The folder must belong to the user and let no one else in (0700), the socket and the file
must belong to the user and be theirs alone (0600): anything else is never used, by the
service or by ``ask``, so a question never goes to a socket someone else put there.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.atomic import atomic_output
from htmlrag_chat.base.errors import UserError

SOCKET, INFO = "ask.sock", "service.json"
_INFO_BYTES = 4096


def folder() -> Path:
    """The user's service folder (it may not exist yet)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "htmlrag-chat"
    return Path(tempfile.gettempdir()) / f"htmlrag-chat-{os.getuid()}"


@dataclass(frozen=True)
class Running:
    """A service as its file describes it."""

    socket: Path
    pid: int
    started: float  # time.time()
    token: str

    @property
    def line(self) -> str:
        """The service in a few words, for the one line ``ask`` says."""
        since = time.strftime("%H:%M", time.localtime(self.started))
        return f"the htmlrag-chat service (pid {self.pid}, running since {since})"


def private(path: Path, mode: int) -> str:
    """Why ``path`` is not the user's alone with permissions ``mode`` ("" when it is)."""
    try:
        info = path.lstat()
    except OSError as error:
        return f"{path}: {error.strerror or error}"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user"
    if stat.S_IMODE(info.st_mode) & ~mode:
        return f"{path} is open to others ({stat.S_IMODE(info.st_mode):o}, not {mode:o})"
    return ""


def make_folder() -> Path:
    """The service folder, made if need be, checked to be the user's alone."""
    place = folder()
    place.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = private(place, 0o700)
    if problem:
        raise UserError(f"cannot serve from {place}: {problem}")
    return place


def publish(socket: Path, pid: int) -> Running:
    """The file that describes the service listening on ``socket``, with a new token."""
    running = Running(socket, pid, time.time(), secrets.token_hex(32))
    text = json.dumps({"socket": str(socket), "pid": pid, "started": running.started,
                       "token": running.token})  # fmt: skip
    with atomic_output(socket.parent / INFO, mode=0o600) as out:
        out.write(text.encode())
    return running


def find() -> tuple[Running | None, str]:
    """The user's service, if one is described and every check holds; else None and why
    not ("" when there simply is none)."""
    place = folder()
    info = place / INFO
    if not info.exists() and not (place / SOCKET).exists():
        return None, ""
    for path, mode in ((place, 0o700), (info, 0o600)):
        problem = private(path, mode)
        if problem:
            return None, problem
    try:
        with info.open("rb") as file:
            described = json.loads(file.read(_INFO_BYTES))
        running = Running(
            Path(described["socket"]), int(described["pid"]), float(described["started"]),
            str(described["token"]),
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError):
        return None, f"{info} is not a service's description"
    if running.socket != place / SOCKET:
        return None, f"{info} names a socket elsewhere"
    problem = private(running.socket, 0o600)
    if problem or not stat.S_ISSOCK(running.socket.lstat().st_mode):
        return None, problem or f"{running.socket} is not a socket"
    return running, ""
