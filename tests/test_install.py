"""Installed like a user installs it: a wheel built from the checkout, installed into a
folder outside it, run from another folder with only that folder on the path (the checkout
cannot be imported), answers from the bundled recording and opens the chat app."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
# What the build reads: the rest of the checkout (tests, demo, bench) must not be needed.
BUILD_INPUTS = ("pyproject.toml", "README.md", "htmlrag_chat", "prompts")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    skip = shutil.ignore_patterns("__pycache__")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=skip)
        else:
            shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(work / "dist"),
         str(source)],
        check=True, cwd=work, timeout=300,
    )  # fmt: skip
    (built,) = (work / "dist").glob("htmlrag_chat-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    target = wheel.parent.parent / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
         "--no-index", "--target", str(target), str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    return target


def user_env(site: Path, home: Path) -> dict[str, str]:
    """The environment of a user who installed the wheel into ``site``: none of the
    checkout on the path, no settings or cache of the person running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HTMLRAG_CHAT_")}
    return env | {
        "PYTHONPATH": str(site),
        "HF_HUB_OFFLINE": "1",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "TERM": "xterm-256color",
    }


def cli(site: Path, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", *argv],
        cwd=home, env=user_env(site, home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recording(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    result = cli(installed, home, "--cache", "demo.db", "cache", "import", "--jsonl",
                 str(DEMO / "recording.jsonl.gz"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return home / "demo.db"


def test_the_wheel_holds_every_package_the_prompts_and_the_stylesheet(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in ROOT.glob("htmlrag_chat/**/__init__.py"):
        assert init.relative_to(ROOT).as_posix() in names, "add the package to pyproject.toml"
    prompts = {p.name for p in (ROOT / "prompts").glob("*.md")} - {"README.md"}
    assert prompts and all(f"htmlrag_chat/_prompts/{name}" in names for name in prompts)
    assert "htmlrag_chat/tui/app.tcss" in names


def test_the_installed_package_reads_its_own_files(installed: Path, tmp_path: Path) -> None:
    code = (
        "import json, htmlrag_chat, htmlrag_chat.prompts as p; print(json.dumps({'module': "
        "htmlrag_chat.__file__, 'prompts': {f.stem: p.load_prompt(f.stem) for f in "
        "p.PROMPTS_DIR.glob('*.md')}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=user_env(installed, tmp_path),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert Path(found["module"]).is_relative_to(installed)
    checkout = {
        p.stem: p.read_text(encoding="utf-8")
        for p in (ROOT / "prompts").glob("*.md")
        if p.name != "README.md"
    }
    assert found["prompts"] == checkout


def test_the_installed_cli_answers_from_the_bundled_recording(
    installed: Path, recording: Path
) -> None:
    result = cli(installed, recording.parent, "--replay-db", str(recording), "ask", "--json",
                 "--reader", "extractive", "--pruner", "bm25", "--tokenizer", "approx",
                 QUESTION["question"])  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["reader"] == "extractive" and answer["sources"]
    assert any(gold.lower() in answer["answer"].lower() for gold in QUESTION["answers"])
    assert "Traceback" not in result.stderr


def run_in_terminal(site: Path, home: Path, argv: list[str]) -> tuple[int, str]:
    """Run the CLI in a pseudo-terminal of 120x36 until it exits; once its prompt is drawn,
    press Ctrl+Q. Returns the exit status and everything it drew."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the user's shell in the user's folder
        os.chdir(home)
        os.execve(sys.executable, [sys.executable, "-m", "htmlrag_chat", *argv],
                  user_env(site, home))  # fmt: skip
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    drawn, quit_sent, deadline = b"", False, time.monotonic() + 90
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the app exited and closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        if not quit_sent and b"Ask anything" in drawn:
            os.write(fd, b"\x11")  # Ctrl+Q
            quit_sent = True
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), drawn.decode("utf-8", "replace")


def test_the_installed_chat_app_opens_with_its_stylesheet(installed: Path, recording: Path) -> None:
    argv = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    status, drawn = run_in_terminal(installed, recording.parent, argv)
    assert "Ask anything" in drawn and "StylesheetError" not in drawn
    assert "\u256d" in drawn  # the panels' round borders: app.tcss was applied
    assert status == 0

    broken = installed.parent / "broken-site"
    shutil.copytree(installed, broken)
    (broken / "htmlrag_chat" / "tui" / "app.tcss").unlink()
    status, drawn = run_in_terminal(broken, recording.parent, argv)
    assert "StylesheetError" in drawn and "Ask anything" not in drawn
    assert status == 1  # not 0: a chat app that could not open is a failure
