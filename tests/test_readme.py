"""The shell blocks of the README and the docs, as a newcomer pastes them.

Every ```` ```sh ```` block of README.md, docs/*.md and demo/README.md carries one of two
marks. ``<!-- tests/test_readme.py runs each command of the next block -->``: each command
goes through the real CLI, in order, against real files in a scratch folder (a fresh HOME,
so ``~`` and the config file are the test's), with the network shut off, and exits as
documented. ``<!-- not run: WHY -->`` (an install, another program, a server left running,
minutes of work): each ``htmlrag-chat`` command in it is still read by the real parser, so
an option that does not exist fails, and it reads nothing outside the repository
(``../shared`` is beside the project's checkout, not in a clone). A block with neither mark
fails: a new block must say which it is.

A block that runs uses the little of the shell these blocks use: ``export NAME=VALUE``,
``NAME=VALUE``, ``"$NAME"``, ``~/``, ``echo WORDS | htmlrag-chat ...`` and a trailing
``# exit N``. Any other shell form fails the test, so a doc cannot show what is not run.
"""

from __future__ import annotations

import errno
import io
import os
import re
import shlex
import shutil
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from string import Template

import pytest

from htmlrag_chat.cli import build_parser, main
from htmlrag_chat.commands.typed import with_ask
from htmlrag_chat.store.db import Store
from tests.loopback import ThreadedApp
from tests.search_apis import SearchApis

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ROOT / "tests" / "fixtures" / "documents"
MARK = "<!-- tests/test_readme.py runs each command of the next block -->"
NOT_RUN = re.compile(r"<!-- not run: [^>]+ -->")
BLOCK = re.compile(r"^(<!--[^\n]*-->\n)?```sh\n(.*?)\n```", re.S | re.M)
EXIT = re.compile(r"#.*\bexit (\d+)\s*$")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
COMMANDS = {"ask", "history", "config", "fetch", "search", "cache", "eval", "clean", "prune",
            "models", "mcp", "chat", "completion"}  # fmt: skip
SEPARATORS = {"&&", "|", "&", ";", "||"}
# A file of the repository a command reads (a dataset, a recording, a script): it exists.
REPO_FILE = re.compile(r"^(bench|demo|tests)/[\w./-]+\.(jsonl|json|gz|xz|py|sh)$")
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "demo" / "README.md"]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    mark: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        lines = self.text.replace("\\\n", " ").splitlines()
        return [line for line in lines if line.strip() and not line.lstrip().startswith("#")]


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(page, line, (match.group(1) or "").strip(), match.group(2)))
    return found


BLOCKS = blocks()
RUN = [block for block in BLOCKS if block.mark == MARK]


def test_every_shell_block_says_whether_it_runs() -> None:
    unmarked = [b.name for b in BLOCKS if b.mark != MARK and not NOT_RUN.fullmatch(b.mark)]
    assert unmarked == [], "mark each block: " + MARK + " or <!-- not run: WHY -->"
    assert len(RUN) >= 4  # the README's offline block, its documents and config, settings.md


# -- the blocks that are not run: read by the parser, and nothing outside the repository


@pytest.mark.parametrize(
    "block", [b for b in BLOCKS if b.mark != MARK], ids=lambda b: b.name
)  # fmt: skip
def test_the_commands_of_a_block_not_run_are_ones_the_parser_takes(block: Block) -> None:
    parser = build_parser()
    for line in block.commands():
        words = shlex.split(line, comments=True)
        if "../shared" not in block.mark:  # else the mark says it needs what a clone lacks
            assert not any(word.startswith("../shared") for word in words), line
        after = dict(zip(words[1:], words, strict=False))  # each word's word before
        inputs = [w for w in words if REPO_FILE.match(w) and after.get(w) not in ("--out", ">")]
        assert [w for w in inputs if not (ROOT / w).exists()] == [], line
        for start, word in enumerate(words):
            # The command itself: first on the line, or after a separator or ``--`` (as
            # ``claude mcp add NAME -- htmlrag-chat mcp`` runs it), not a name given to it.
            command = start == 0 or words[start - 1] in SEPARATORS | {"--"}
            if Path(word).name != "htmlrag-chat" or not command:
                continue
            argv = list(words[start + 1 :])
            for end, word in enumerate(argv):
                if word in SEPARATORS:
                    argv = argv[:end]
                    break
            try:
                parser.parse_args(with_ask(parser, [w.rstrip("&") for w in argv]))
            except SystemExit as refused:
                pytest.fail(f"{block.name}: {line}\nrefused by the parser (exit {refused.code})")


# -- the blocks that run


def home_with_notes(home: Path, cwd: Path) -> None:
    """The files the documents examples name: ``~/notes`` (the fixture documents and a
    note on the house), ``~/papers/quince.pdf`` and ``report.pdf`` here (a real PDF)."""
    shutil.copytree(DOCUMENTS, home / "notes")
    (home / "notes" / "house.md").write_text(
        "# House notes\n\nWe decided to replace the roof of the barn in April, with slate.\n\n"
        "The boat shed key hangs on the hook behind the pantry door.\n",
        encoding="utf-8",
    )
    (home / "papers").mkdir()
    shutil.copy(DOCUMENTS / "orchard.pdf", home / "papers" / "quince.pdf")
    shutil.copy(DOCUMENTS / "orchard.pdf", cwd / "report.pdf")


def readme_offline_block(tmp_path: Path, ran: list[str], tried: list[object]) -> None:
    """The README's offline block: no address was even tried, and every ask was kept, the
    replayed ones too."""
    assert tried == []
    assert {"ask", "history", "config", "fetch"} <= set(ran)
    with Store.open(tmp_path / os.environ["HTMLRAG_CHAT_CACHE"], readonly=True) as cache:
        kept = sum(summary["turns"] for summary in cache.conversation_summaries())
    assert kept == ran.count("ask")


SETUP: dict[str, Callable[[Path, Path], None]] = {
    "README.md": home_with_notes,
    "docs/docs.md": home_with_notes,
}
AFTER: dict[str, Callable[[Path, list[str], list[object]], None]] = {
    "README.md#demo": readme_offline_block
}


class Terminal(io.TextIOWrapper):
    """stdin as a person at a terminal has it (nothing piped in)."""

    def __init__(self, data: bytes = b"", tty: bool = True) -> None:
        super().__init__(io.BytesIO(data), encoding="utf-8")
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[object]]:
    """A machine with no network: names do not resolve and connections fail as they do
    offline (OSError), but for the one search backend, a loopback SearXNG that answers
    429; yields what was tried elsewhere. Set in the environment, not a settings file:
    the blocks write their own (config init)."""
    tried: list[object] = []
    with ThreadedApp(SearchApis(status={"searxng": 429}).app()) as port:
        monkeypatch.delenv("HTMLRAG_CHAT_CONFIG", raising=False)
        monkeypatch.setenv("HTMLRAG_CHAT_BACKENDS", "searxng")
        monkeypatch.setenv("HTMLRAG_CHAT_SEARXNG_URL", f"http://127.0.0.1:{port}")
        _offline(monkeypatch, ("127.0.0.1", port), tried)
        yield tried


def _offline(
    monkeypatch: pytest.MonkeyPatch, allowed: tuple[str, int], tried: list[object]
) -> None:
    connect, resolve = socket.socket.connect, socket.getaddrinfo

    def no_route(self: socket.socket, address: object) -> None:
        if address != allowed:
            tried.append(address)
            raise OSError(errno.ENETUNREACH, "Network is unreachable")
        connect(self, address)

    def no_names(host: object, *args: object, **kwargs: object) -> object:
        if host != allowed[0]:
            tried.append(host)
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", no_route)
    monkeypatch.setattr(socket, "getaddrinfo", no_names)


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.name)
def test_every_block_marked_to_run_runs_offline_as_documented(
    block: Block,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    offline: list[object],
    capsys: pytest.CaptureFixture[str],
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    cwd.mkdir()
    (cwd / "demo").symlink_to(ROOT / "demo")
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(cwd)
    page = str(block.page.relative_to(ROOT))
    if page in SETUP:
        SETUP[page](home, cwd)
    variables: dict[str, str] = {}
    ran: list[str] = []
    for line in block.commands():
        given = [Template(w).substitute(os.environ | variables) for w in shlex.split(line, True)]
        words = [os.path.expanduser(w) if w.startswith("~/") else w for w in given]
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
            f"{block.name}: {line}\nexit {code}, not {expected}\n{out[-2000:]}\n{err[-2000:]}"
        )
        assert out.strip() or code != 0, f"{line}: printed nothing on stdout"
        ran.append(next((word for word in words[1:] if word in COMMANDS), "ask"))
    key = f"{page}#demo" if "cache import --jsonl demo/" in block.text else page
    if key in AFTER:
        AFTER[key](cwd, ran, offline)


# -- the README as a user guide


def test_the_readme_is_a_user_guide_under_20000_bytes() -> None:
    """What a user does and sees, one line and a link per figure: it had grown to 25,187
    bytes with figures' histories and test notes, which belong in docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) < 20_000
    top = BLOCKS[0]
    assert top.page.name == "README.md" and top.line < 5
    assert "make demo" in top.text and "make test" in top.text
    assert re.search(r"make test .*\n.*first run is \d+-\d+ minutes", top.text)
    install = text.split("## Install\n")[1].split("\n## ")[0]
    assert "No pipx or uv?" in install and "pip install --user pipx" in install


def test_no_page_tells_to_install_the_project_by_a_name_pypi_would_be_asked_for() -> None:
    """``pip install 'htmlrag-chat[pdf]'`` installs whatever someone registered on PyPI
    under that name: an extra goes in from the checkout (``'.[pdf]'``)."""
    bare = re.compile(r"(pip|pipx|uv)\b[^\n`]*\binstall\b[^\n`]*['\"]?htmlrag-chat\[")
    found = [page.name for page in PAGES if bare.search(page.read_text(encoding="utf-8"))]
    assert found == []
