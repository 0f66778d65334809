"""``mcp --http`` under a flood of idle connections, with the common open-file limit of 1024.

The server is the real ``htmlrag-chat --replay-db <demo recording> mcp --http`` process,
its ``RLIMIT_NOFILE`` lowered to ``--files`` (1024) before it starts. The flood opens
``--connections`` (1,100) TCP connections at once that never send a byte and carry no
token, then one connection that sends half a request head and stops. Reported: how many
connections connected (the kernel completes a handshake the server has not accepted yet),
how many sockets the server process holds after ``--settle`` seconds (its cap, plus its
listening socket and the few of its own), the authorised ``initialize`` + ``tools/list``
made while the flood is held (answered or not, and in how many seconds), when the server
closed the unfinished head, and whether it is still running.

    .venv/bin/python bench/mcp_flood.py [--files 1024] [--connections 1100]
"""

from __future__ import annotations

import asyncio
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import argument_parser, write_report
from tests.mcp.flood import close_all, closed_within, flood, held, unfinished_head
from tests.mcp.servers import Watched, http_server, http_session

HEAD_WAIT_S = 30.0  # how long the unfinished head is given to be closed
ANSWER_WAIT_S = 60.0


def import_demo(folder: Path) -> Path:
    from tests.conftest import import_demo as imported

    return imported(folder)


async def authorised(url: str, token: str | None) -> list[str]:
    async with http_session(url, token) as session:
        return [tool.name for tool in (await session.list_tools()).tools]


def sockets_of(watched: Watched) -> int | None:
    """The server's sockets now, None once it has ended."""
    try:
        return watched.sockets()
    except OSError:
        return None


def run(files: int, connections: int, settle: float, tmp: Path) -> dict[str, Any]:
    recording = import_demo(tmp)
    options = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    watched = Watched()
    report: dict[str, Any] = {"files": files, "connections": connections}
    try:
        with http_server(options, tmp, files=files, watched=watched) as (url, token):
            report["server_sockets_before"] = sockets_of(watched)
            start = time.perf_counter()
            sockets = flood(url, connections)
            report["connected"] = len(sockets)
            report["flood_s"] = round(time.perf_counter() - start, 2)
            time.sleep(settle)
            report["server_sockets_after_settle"] = sockets_of(watched)
            report["open_seen_by_the_flood"] = held(sockets)
            start = time.perf_counter()
            try:
                tools = asyncio.run(asyncio.wait_for(authorised(url, token), ANSWER_WAIT_S))
                report["authorised_answer"] = {
                    "tools": tools,
                    "s": round(time.perf_counter() - start, 2),
                }
            except Exception as error:  # the figure is whether it was answered, and why not
                report["authorised_answer"] = {"error": f"{type(error).__name__}: {error}"}
            report["server_sockets_after_the_answer"] = sockets_of(watched)
            try:
                closed = closed_within(unfinished_head(url), HEAD_WAIT_S)
                report["unfinished_head_closed_after_s"] = closed and round(closed, 2)
            except OSError as error:  # refused: nothing listens any more
                report["unfinished_head_closed_after_s"] = f"{type(error).__name__}: {error}"
            report["server_sockets_at_the_end"] = sockets_of(watched)
            close_all(sockets)
        report["server_alive"] = True
    except AssertionError as error:  # http_server: the server ended
        report["server_alive"] = False
        report["server_error"] = str(error).splitlines()[0]
    said = [line.rstrip() for line in watched.lines if "mcp: token: " not in line]
    report["server_stderr_tail"] = said[-5:]
    return report


def main() -> None:
    parser = argument_parser(__doc__, "mcp_flood.json")
    parser.add_argument("--files", type=int, default=1024, help="the server's RLIMIT_NOFILE")
    parser.add_argument("--connections", type=int, default=1100, help="idle connections")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds before counting")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = run(args.files, args.connections, args.settle, Path(folder))
    report = {"machine": f"{platform.machine()}, Python {platform.python_version()}", **figures}
    write_report(args.out, report)
    print(report)


if __name__ == "__main__":
    main()
