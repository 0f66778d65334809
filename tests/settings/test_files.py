"""The settings file as the commands find it: only a regular file is read (a FIFO, a folder,
a device or a socket is refused at once, never waited on), ``config set`` writes through a
symbolic link to the file it names, keeps a secret to its owner, and edits lines as TOML
ends them, whatever other line separators a value or a comment holds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.cli import main
from htmlrag_chat.settings.layered import resolve

COMMAND = [sys.executable, "-m", "htmlrag_chat"]


@pytest.fixture(autouse=True)
def no_settings_from_outside(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("HTMLRAG_CHAT_") or name in ("OPENAI_API_KEY", "BRAVE_API_KEY"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))


def command(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def default_path(tmp_path: Path) -> Path:
    path = tmp_path / "xdg" / "htmlrag-chat" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@pytest.mark.parametrize("how", ["option", "environment", "default"])
def test_a_fifo_as_the_settings_file_is_refused_at_once(tmp_path: Path, how: str) -> None:
    """In a child process with a time limit: a FIFO nobody writes to blocks a reader forever."""
    fifo = default_path(tmp_path) if how == "default" else tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    env.pop("HTMLRAG_CHAT_CONFIG", None)
    options = ["--config", str(fifo)] if how == "option" else []
    if how == "environment":
        env["HTMLRAG_CHAT_CONFIG"] = str(fifo)
    for argv in (["config", *options], ["config", "set", "rounds", "1", *options]):
        done = subprocess.run(
            [*COMMAND, *argv], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"{fifo}: not a regular file (a named pipe)" in done.stderr
    assert fifo.is_fifo()


def test_a_folder_a_device_or_a_socket_is_refused_and_named(tmp_path: Path) -> None:
    folder = tmp_path / "folder.toml"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX)
    sock = tmp_path / "s.toml"
    server.bind(str(sock))
    try:
        kinds = ((folder, "a folder"), (Path("/dev/zero"), "a device"), (sock, "a socket"))
        for path, kind in kinds:
            with pytest.raises(UserError, match=f"not a regular file \\({kind}\\)"):
                resolve(path)
    finally:
        server.close()


def test_a_secret_set_into_a_world_readable_file_makes_it_its_owners_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[reader]\nmodel = "m"\n', encoding="utf-8")
    path.chmod(0o644)
    code, out, err = command(capsys, "config", "set", "model", "n", "--config", str(path))
    assert code == 0 and err == "" and path.stat().st_mode & 0o777 == 0o644  # no secret yet
    code, out, err = command(capsys, "config", "set", "api_key", "sk-1", "--config", str(path))
    assert code == 0 and path.stat().st_mode & 0o777 == 0o600
    assert out == f"reader.api_key = <hidden> in {path}\n"
    assert err == (
        f"htmlrag-chat: note: {path} holds an API key now: made readable by its owner only "
        "(0600, was 0644)\n"
    )
    path.chmod(0o640)  # a key already there: any later set closes the file too
    assert command(capsys, "config", "set", "rounds", "1", "--config", str(path))[0] == 0
    assert path.stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("key", ["reader.api_key", "brave_api_key", "search.tavily_api_key"])
def test_every_secret_closes_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text("", encoding="utf-8")
    path.chmod(0o664)
    assert command(capsys, "config", "set", key, "k-123", "--config", str(path))[0] == 0
    assert path.stat().st_mode & 0o777 == 0o600


def test_set_on_a_linked_settings_file_writes_through_to_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As dotfiles managers link them: the link stays, the file it names changes in one step
    and keeps its permissions, and what the link names is what the next command reads."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "htmlrag.toml"
    target.write_text("# mine\n[research]\nrounds = 2\n", encoding="utf-8")
    target.chmod(0o640)
    link = default_path(tmp_path)
    link.symlink_to(os.path.relpath(target, link.parent))
    code, out, _ = command(capsys, "config", "set", "research.rounds", "1")
    assert code == 0 and out == f"research.rounds = 1 in {link}\n"
    assert link.is_symlink() and link.resolve() == target
    assert target.read_text(encoding="utf-8") == "# mine\n[research]\nrounds = 1\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert resolve()["research.rounds"] == 1
    assert sorted(p.name for p in dotfiles.iterdir()) == ["htmlrag.toml"]  # nothing left over
    chained = tmp_path / "chained.toml"
    chained.symlink_to(link)  # a link to the link
    assert command(capsys, "config", "set", "pages", "4", "--config", str(chained))[0] == 0
    assert chained.is_symlink() and "pages = 4" in target.read_text(encoding="utf-8")


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_set_edits_lines_as_toml_ends_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], separator: str
) -> None:
    """U+2028, U+2029 and U+0085 end lines for ``str.splitlines`` but not for TOML: a comment
    or a value holding one is kept as it is, and later sets still edit the right line."""
    path = tmp_path / "config.toml"
    region = "" if separator == "\x85" else f'region = "de{separator}de"\n'  # U+0085: Cc
    text = f"# a{separator}b\r\n[search]\n{region}[research]  # x{separator}y\nrounds = 2\n"
    path.write_bytes(text.encode("utf-8"))
    for key, value in (("research.rounds", "1"), ("pages", "3"), ("search.time", "week")):
        code, _, err = command(capsys, "config", "set", key, value, "--config", str(path))
        assert code == 0, err
    assert path.read_bytes().decode("utf-8") == (
        f'# a{separator}b\r\n[search]\ntime = "week"\n{region}[research]  # x{separator}y\n'
        "pages = 3\nrounds = 1\n"
    )


@pytest.mark.parametrize("character", ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85"])
def test_a_control_character_in_a_value_is_refused_by_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], character: str
) -> None:
    path = tmp_path / "config.toml"
    code, _, err = command(
        capsys, "config", "set", "model", f"a{character}b", "--config", str(path)
    )
    assert code == 2 and "must not hold control characters" in err and not path.exists()
