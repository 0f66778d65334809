"""``mcp --http``'s connection limits in parts: the cap under an open-file limit, and the
event loop's reports when descriptors run out (the server, flooded for real, is
``tests/mcp/test_http.py``'s)."""

from __future__ import annotations

import asyncio
import errno
import resource
from typing import Any

import pytest

from htmlrag_chat.mcp.connections import (
    MAX_CONNECTIONS,
    MIN_CONNECTIONS,
    LoopReports,
    connection_cap,
)


@pytest.mark.parametrize(
    ("files", "cap"),
    [(1024, 256), (4096, MAX_CONNECTIONS), (200, 50), (32, MIN_CONNECTIONS)],
)
def test_the_cap_is_a_quarter_of_the_open_file_limit_within_bounds(files: int, cap: int) -> None:
    assert connection_cap(files) == cap
    assert connection_cap(resource.RLIM_INFINITY) == MAX_CONNECTIONS


def test_running_out_of_descriptors_is_one_line_now_and_then() -> None:
    said: list[str] = []
    reports = LoopReports(said.append)
    loop = asyncio.new_event_loop()
    try:
        for number in (errno.EMFILE, errno.ENFILE, errno.EMFILE):
            error = OSError(number, "Too many open files")
            reports(loop, {"message": "socket.accept() out of system resource", "exception": error})
        assert said == ["out of file descriptors: new connections wait (is the limit low?)"]
    finally:
        loop.close()


def test_a_report_that_cannot_be_printed_is_one_line_not_the_end_of_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio's own handler logs a traceback; the handler the SDK installs imports a module
    to format it, which needs a descriptor: its failure ended the server."""
    said: list[str] = []
    loop = asyncio.new_event_loop()

    def failing(context: dict[str, Any]) -> None:
        raise OSError(errno.EMFILE, "Too many open files: 'rich/traceback.py'")

    monkeypatch.setattr(loop, "default_exception_handler", failing)
    try:
        LoopReports(said.append)(loop, {"message": "Task exception was never retrieved"})
        assert said == ["Task exception was never retrieved (OSError)"]
    finally:
        loop.close()
