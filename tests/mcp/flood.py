"""Idle connections on ``mcp --http``: sockets that connect and never send a request (or
never finish its head), against a server whose open-file limit is lowered to meet them."""

from __future__ import annotations

import resource
import select
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit


def file_limit(files: int) -> Callable[[], None]:
    """A ``preexec_fn`` that lowers the child's open-file limit (soft and hard) to
    ``files``, the common 1024 of a desktop session or a smaller one for a test."""

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

    return lower


def address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def flood(url: str, count: int, seconds: float = 10.0) -> list[socket.socket]:
    """``count`` connections to ``url``'s host and port, opened at once without blocking;
    those that connected within ``seconds`` (the rest are closed here)."""
    host, port = address(url)
    pending = []
    for _ in range(count):
        connection = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        connection.setblocking(False)
        connection.connect_ex((host, port))
        pending.append(connection)
    connected: list[socket.socket] = []
    waiting = {connection.fileno(): connection for connection in pending}
    poll = select.poll()  # not select(): descriptors here go past 1024
    for descriptor in waiting:
        poll.register(descriptor, select.POLLOUT)
    deadline = time.monotonic() + seconds
    while waiting and time.monotonic() < deadline:
        for descriptor, _ in poll.poll(200):
            poll.unregister(descriptor)
            connection = waiting.pop(descriptor)
            if connection.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected.append(connection)
            else:
                connection.close()
    for connection in waiting.values():
        connection.close()
    return connected


def held(connections: list[socket.socket]) -> int:
    """How many of ``connections`` the server still holds open: not closed or reset."""
    count = 0
    for connection in connections:
        try:
            data = connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:  # nothing to read, and not closed
            count += 1
        except OSError:  # reset by the server
            pass
        else:
            count += bool(data)  # b"": closed by the server
    return count


def close_all(connections: list[socket.socket]) -> None:
    for connection in connections:
        connection.close()


def unfinished_head(url: str) -> socket.socket:
    """A connection that sends the start of a request's head and never its end."""
    connection = socket.create_connection(address(url), timeout=5)
    connection.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return connection


def closed_within(connection: socket.socket, seconds: float) -> float | None:
    """The seconds until the server closed ``connection``, if it did within ``seconds``."""
    start = time.monotonic()
    connection.settimeout(seconds)
    try:
        while connection.recv(4096):
            pass
    except TimeoutError:
        return None
    except OSError:  # reset
        pass
    return time.monotonic() - start
