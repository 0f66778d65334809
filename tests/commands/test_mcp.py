"""``mcp``'s own options: one-line errors before anything loads or listens."""

from __future__ import annotations

import socket

import pytest

from htmlrag_chat.base.errors import EXIT_USAGE
from htmlrag_chat.cli import main


def test_port_without_http_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "--port", "9000"]) == EXIT_USAGE
    assert capsys.readouterr().err == (
        "htmlrag-chat: --port needs --http (stdio is the default transport)\n"
    )


def test_a_port_in_use_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mcp", "--http", "--port", str(port)]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.startswith(f"htmlrag-chat: cannot listen on 127.0.0.1:{port}: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_a_bad_port_is_refused_by_the_parser(port: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["mcp", "--http", "--port", port])
    assert exit_.value.code == EXIT_USAGE
