"""What ``ask`` shows while it works: the real CLI in a pseudo-terminal (a live status line,
cleared before the answer; ``--quiet``), and the output's parts on real events."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import select
import socket
import sys
import time
from pathlib import Path

import pytest

from htmlrag_chat.base.events import AnswerDelta, Notice, Progress, StageFinished, StageStarted
from htmlrag_chat.commands.output import (
    FALLBACK_HEADER,
    AskOutput,
    StatusLine,
    choose_form,
    first_showing,
)
from htmlrag_chat.reader.extractive import HEADER
from htmlrag_chat.store.db import Store
from tests.commands.test_ask import scripted
from tests.conftest import DEMO, import_demo
from tests.openai_server import ScriptedLLM, ThreadedLLM

ROOT = Path(__file__).resolve().parents[2]
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
# A status line as ``PipelineStatus.line`` writes it: a stage, then counts, then elapsed.
STATUS = re.compile(r"^(opening|loading|planning|searching|fetching|cleaning|pruning|checking|"
                    r"answering|starting)\b.* \d+\.\d s$")  # fmt: skip


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_demo(tmp_path_factory.mktemp("output"))


def in_terminal(
    argv: list[str], home: Path, stdout_pipe: bool = False, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """Run the CLI with stderr (and stdout, unless ``stdout_pipe``) on a pseudo-terminal of
    100 columns, ``env`` added to the environment; the exit status, what the terminal got,
    and what the pipe got."""
    read_end, write_end = os.pipe()
    pid, fd = pty.fork()
    if pid == 0:
        os.close(read_end)
        if stdout_pipe:
            os.dup2(write_end, 1)
        os.chdir(home)
        child = (
            os.environ
            | (env or {})
            | {
                "PYTHONPATH": str(ROOT),
                "COLUMNS": "100",
                "HTMLRAG_CHAT_DERIVED": str(home / "derived.db"),
            }
        )
        os.execve(sys.executable, [sys.executable, "-m", "htmlrag_chat", *argv], child)
    os.close(write_end)
    drawn, piped, deadline = b"", b"", time.monotonic() + 240
    open_fds = {fd, read_end}
    while open_fds and time.monotonic() < deadline:
        for ready in select.select(list(open_fds), [], [], 0.2)[0]:
            try:
                chunk = os.read(ready, 65536)
            except OSError:  # the terminal closed with the program
                chunk = b""
            if not chunk:
                open_fds.discard(ready)
            elif ready == fd:
                drawn += chunk
            else:
                piped += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    os.close(read_end)
    return os.waitstatus_to_exitcode(status), drawn.decode(), piped.decode()


def screens(drawn: str) -> tuple[list[str], int]:
    """Replay what a terminal got (carriage returns, overwriting characters, newlines) into
    the lines it shows at the end, and the most status lines it showed at any moment."""
    lines: list[list[str]] = [[]]
    column, most = 0, 0
    for char in drawn:
        if char == "\n":
            lines.append([])
            column = 0
        elif char == "\r":
            column = 0
        else:
            line = lines[-1]
            line[column : column + 1] = [char]
            column += 1
            if char == " ":
                continue
        shown = ["".join(line).rstrip() for line in lines]
        most = max(most, sum(1 for line in shown if STATUS.match(line)))
    return ["".join(line).rstrip() for line in lines], most


def test_a_terminal_shows_one_status_line_cleared_before_the_answer(
    recording: Path, tmp_path: Path
) -> None:
    """The default pruner: its second stage is not here, so a block says so first."""
    argv = ["--replay-db", str(recording), "ask", "--reader", "extractive", "--tokenizer",
            "approx", QUESTION]  # fmt: skip
    status, drawn, _ = in_terminal(argv, tmp_path)
    assert status == 0, drawn
    lines, most = screens(drawn)
    assert most == 1  # the status line was drawn, and never more than one at a time
    assert drawn.count("\r") - drawn.count("\r\n") > 3  # ... replaced as the stages went by
    assert not [line for line in lines if STATUS.match(line)]  # cleared for good
    start = lines.index(HEADER)  # the answer starts a line of its own
    assert lines[0] == f"htmlrag-chat: {FALLBACK_HEADER}"  # the missing models' block...
    assert lines[1].split() == ["pruner", "the", "first", "pruning", "stage", "alone"]
    assert all(line.startswith("  ") for line in lines[1:start])  # ...right above the answer
    assert "Sources:" in lines[start:] and "[1] " in drawn
    assert "[  " not in drawn  # no timestamped trace


def test_quiet_prints_only_the_answer_and_its_sources(recording: Path, tmp_path: Path) -> None:
    argv = ["--replay-db", str(recording), "ask", "-q", "--reader", "extractive", "--pruner",
            "bm25", "--tokenizer", "approx", QUESTION]  # fmt: skip
    status, terminal, out = in_terminal(argv, tmp_path, stdout_pipe=True)
    assert status == 0, terminal
    assert terminal == ""  # no status line, no notes
    answer, sources = out.split("\n\nSources:\n")
    assert answer.startswith(HEADER) and "[" in answer
    *cited, read = sources.splitlines()  # the cited ones, then the others folded
    assert cited and all(re.match(r"\[\d+\] .+ - https?://", line) for line in cited)
    assert re.fullmatch(r"Also read, not cited \(\d\): \[\d\] [\w.-]+(, \[\d\] [\w.-]+)*", read)


def test_an_answer_piped_elsewhere_leaves_the_terminal_clean(
    recording: Path, tmp_path: Path
) -> None:
    """``ask ... | tee answer.txt``: the pipe's end may be this terminal too, so the status
    line is cleared for good when the answer starts (never redrawn into its text); held
    back with ``--no-stream``, the answer is counted on the line meanwhile."""
    argv = ["--replay-db", str(recording), "ask", "--reader", "extractive", "--pruner", "bm25",
            "--tokenizer", "approx", QUESTION]  # fmt: skip
    status, terminal, out = in_terminal(argv, tmp_path, stdout_pipe=True)
    assert status == 0, terminal
    lines, most = screens(terminal)
    assert most == 1 and not [line for line in lines if STATUS.match(line)]
    assert "chars" not in terminal  # gone before the answer: none of it counted
    assert out.startswith(HEADER) and "\x1b" not in out
    status, terminal, out = in_terminal([*argv, "--no-stream"], tmp_path, stdout_pipe=True)
    assert status == 0 and re.search(r"answering · .*\d+ chars", terminal)
    assert out.startswith(HEADER)


def test_verbose_prints_the_timestamped_trace_in_a_terminal_too(
    recording: Path, tmp_path: Path
) -> None:
    argv = ["--replay-db", str(recording), "ask", "-v", "--reader", "extractive", "--pruner",
            "bm25", "--tokenizer", "approx", QUESTION]  # fmt: skip
    status, drawn, _ = in_terminal(argv, tmp_path)
    assert status == 0, drawn
    assert "\r" not in drawn.replace("\r\n", "")
    assert re.search(r"^\[ *\d+\.\d\ds\] search done in", drawn, re.MULTILINE)
    # An extractive answer comes at once: its sources are listed after it, not also before.
    assert re.search(r"^\[ *\d+\.\d\ds\] sources: \d ready", drawn, re.MULTILINE)
    assert "while the reader reads" not in drawn and drawn.count("theverge.com") == 1


def test_a_failure_in_a_terminal_is_one_line_and_no_status_line_is_left(tmp_path: Path) -> None:
    """Offline (a proxy on a closed loopback port), on a new cache: the search fails once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{probe.getsockname()[1]}"
    argv = ["--cache", str(tmp_path / "new.db"), "ask", "--reader", "extractive", "--pruner",
            "bm25", "--tokenizer", "approx", "Who designed the Eiffel tower?"]  # fmt: skip
    status, drawn, _ = in_terminal(argv, tmp_path, env={"DDGS_PROXY": proxy})
    assert status == 5, drawn
    lines, most = screens(drawn)
    assert most == 1
    (error,) = [line for line in lines if line]
    assert error.startswith("htmlrag-chat: search for 'Who designed the Eiffel tower?' failed")


@pytest.mark.parametrize(
    ("options", "terminal", "form"),
    [
        ({}, True, "live"),
        ({}, False, "plain"),
        ({"progress": True}, False, "trace"),
        ({"progress": True}, True, "live"),
        ({"verbose": True}, True, "trace"),
        ({"quiet": True}, True, "quiet"),
        ({"quiet": True, "progress": True}, False, "quiet"),
    ],
)
def test_the_form_follows_the_options_and_stderr(
    options: dict[str, bool], terminal: bool, form: str
) -> None:
    flags = {"quiet": False, "verbose": False, "progress": False} | options
    assert choose_form(**flags, terminal=terminal) == form


def test_no_stream_holds_the_answer_until_it_is_complete(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with AskOutput("plain", stream=False) as emit:
        emit(StageStarted("read"))
        emit(AnswerDelta("Gustave "))
        emit(AnswerDelta("Eiffel [1]"))
        assert capsys.readouterr().out == ""
        emit.finish()
    assert capsys.readouterr().out == "Gustave Eiffel [1]"


def test_the_status_line_is_replaced_cut_to_the_terminal_and_gives_way_to_notes() -> None:
    class Terminal(io.StringIO):
        def fileno(self) -> int:
            raise OSError("no descriptor: the width falls back to 80 columns")

    terminal = Terminal()
    line = StatusLine(terminal, clock=lambda: 0.0)
    line.apply(StageStarted("fetch", 40))
    line.apply(Progress("fetch", 3, 40, failed=1))
    line.print_above("htmlrag-chat: note: a note")
    line.apply(StageFinished("embed/prune", 9.0, {"tokens_before": 10**12, "tokens_after": 10}))
    line.stop()
    line.apply(Progress("fetch", 4, 40))  # after stop: never drawn again
    written = terminal.getvalue()
    assert "\x1b" not in written and written.count("\n") == 1
    shown, most = screens(written)
    assert shown == ["htmlrag-chat: note: a note", ""] and most == 1
    assert "fetching pages · pages 3/40, 1 failed · 0.0 s" in written
    assert all(len(draw.rstrip()) <= 79 for draw in re.split("[\r\n]", written))
    assert "4/40" not in written


def test_the_block_of_missing_models_is_said_once_per_cache_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "side.db"))
    with Store.open(tmp_path / "a.db") as cache:
        assert first_showing(cache, "block") and not first_showing(cache, "block")
        assert first_showing(cache, "another block")
    with Store.open(tmp_path / "a.db", readonly=True) as replay:
        assert not first_showing(replay, "block")  # said to this file in record mode
        assert first_showing(replay, "a replay's block")  # remembered in its side file...
        assert not first_showing(replay, "a replay's block")
    with Store.open(tmp_path / "b.db") as other:
        assert first_showing(other, "block")
    with Store.open(tmp_path / "b.db", readonly=True) as replay:
        assert first_showing(replay, "a replay's block")  # ... for that file only


def test_a_failure_leaves_no_status_line_and_no_block(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError), AskOutput("plain") as emit:
        emit(Notice("tokenizer: not here", role="tokenizer", instead="approximate token counts"))
        raise RuntimeError("the search failed")
    assert capsys.readouterr().err == ""


def test_quotes_show_under_the_answer_in_a_terminal_and_not_in_a_pipe(
    recording: Path, tmp_path: Path
) -> None:
    """On by default where a person reads; ``--quotes``/``--no-quotes`` say otherwise."""
    with ThreadedLLM(ScriptedLLM(reply=scripted)) as url:
        argv = ["--replay-db", str(recording), "ask", "--reader", "openai", "--base-url", url,
                "--model", "m", "--pruner", "bm25", "--tokenizer", "approx", QUESTION]  # fmt: skip
        status, drawn, _ = in_terminal(argv, tmp_path)
        assert status == 0, drawn
        lines, _ = screens(drawn)
        start = lines.index("Evidence:")
        assert lines[start + 1].startswith("- FaceTime Attention Correction uses ARKit")
        assert lines[start + 2].startswith('  [3] "') and "ARKit" in lines[start + 2]
        assert start < lines.index("Sources:")
        assert any(line.startswith('! unsupported: "Bananas are purple') for line in lines)
        for options, shown in (([], False), (["--quotes"], True)):
            status, terminal, out = in_terminal([*argv, *options], tmp_path, stdout_pipe=True)
            assert status == 0, terminal
            assert ("\nEvidence:\n- FaceTime" in out) is shown
        status, drawn, _ = in_terminal([*argv, "--no-quotes"], tmp_path)
        assert status == 0 and "Evidence:" not in drawn
