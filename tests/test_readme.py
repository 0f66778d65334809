"""The README's examples, run: each command of its marked block goes through the real CLI, in
order, against a real cache file in a scratch folder, with the network shut off.

The block is shell; this runs the little of it that the README uses: ``export NAME=VALUE``,
``NAME=VALUE``, ``"$NAME"``, ``echo WORDS | htmlrag-chat ...`` and a trailing ``# exit N``.
Any other shell form fails the test, so the README cannot show what is not run.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from string import Template

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from tests.search_apis import SearchApis, searxng_config

ROOT = Path(__file__).resolve().parents[1]
MARK = "<!-- tests/test_readme.py runs each command of the next block -->"
BLOCK = re.compile(re.escape(MARK) + r"\n```sh\n(.*?)\n```", re.S)
EXIT = re.compile(r"#.*\bexit (\d+)\s*$")
COMMANDS = {"ask", "history", "config", "fetch", "search", "cache", "eval", "clean", "prune"}
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def readme_commands() -> list[str]:
    found = BLOCK.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found, f"README.md has no block marked {MARK}"
    lines = found.group(1).replace("\\\n", " ").splitlines()
    return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


class Terminal(io.TextIOWrapper):
    """stdin as a person at a terminal has it (nothing piped in)."""

    def __init__(self, data: bytes = b"", tty: bool = True) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No connection can be made: the only search backend is a loopback SearXNG (ddgs's
    own HTTP client would pass the next line by), and any socket the process itself
    opens raises."""
    with searxng_config(monkeypatch, tmp_path, SearchApis(status={"searxng": 429})):
        _refuse_connections(monkeypatch)
        yield


def _refuse_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("a README example used the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)


def test_every_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, offline: None, capsys
) -> None:
    (tmp_path / "demo").symlink_to(ROOT / "demo")
    monkeypatch.chdir(tmp_path)
    variables: dict[str, str] = {}
    ran: list[str] = []
    for line in readme_commands():
        words = [Template(w).substitute(os.environ | variables) for w in shlex.split(line, True)]
        if words[0] == "export" and len(words) == 2 and ASSIGNMENT.match(words[1]):
            monkeypatch.setenv(*ASSIGNMENT.match(words[1]).groups())
            continue
        if len(words) == 1 and ASSIGNMENT.match(words[0]):
            name, value = ASSIGNMENT.match(words[0]).groups()
            variables[name] = value
            continue
        stdin = Terminal()
        if words[0] == "echo" and "|" in words:
            pipe = words.index("|")
            stdin = Terminal((" ".join(words[1:pipe]) + "\n").encode(), tty=False)
            words = words[pipe + 1 :]
        assert words[0] == "htmlrag-chat" and "|" not in words, f"not runnable here: {line}"
        monkeypatch.setattr(sys, "stdin", stdin)
        code = main(words[1:])
        out, err = capsys.readouterr()
        expected = int(EXIT.search(line).group(1)) if EXIT.search(line) else 0
        assert code == expected, (
            f"{line}\nexit {code}, not {expected}\n{out[-2000:]}\n{err[-2000:]}"
        )
        assert out.strip(), f"{line}: printed nothing on stdout"
        ran.append(next(word for word in words[1:] if word in COMMANDS))
    assert {"ask", "history", "config", "fetch"} <= set(ran)
    # Every ask was kept, the replayed ones and their follow-up too.
    with Store.open(tmp_path / os.environ["HTMLRAG_CHAT_CACHE"], readonly=True) as cache:
        kept = sum(summary["turns"] for summary in cache.conversation_summaries())
    assert kept == ran.count("ask")
