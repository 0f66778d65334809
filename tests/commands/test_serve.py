"""``serve`` as a real process and ``ask`` beside it: the same output as an ``ask`` that
answers alone, one line saying the service answered, and nothing left once it stops."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.service import place
from tests.conftest import DEMO, default_sigint, import_demo

QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
SETTINGS = ["--reader", "extractive", "--pruner", "bm25", "--budget", "1024"]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])  # Ctrl+C; a manager's
def test_ask_hands_its_question_to_the_running_service_and_prints_the_same(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    stop: signal.Signals,
) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.db"))
    recording = import_demo(tmp_path)
    replay = ["--replay-db", str(recording)]
    capsys.readouterr()
    assert main([*replay, "ask", QUESTION, *SETTINGS, "--no-service"]) == 0
    alone = capsys.readouterr()

    serving = subprocess.Popen(
        [sys.executable, "-m", "htmlrag_chat", *replay, "serve", *SETTINGS],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ), preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        assert serving.stderr is not None
        line = serving.stderr.readline()
        while line and "serving on" not in line:
            line = serving.stderr.readline()
        assert "serving on" in line, line
        assert main([*replay, "ask", QUESTION, *SETTINGS]) == 0
        served = capsys.readouterr()
        # Other settings: this ask answers alone, and says why in one line.
        assert main([*replay, "ask", QUESTION, *SETTINGS, "--pages", "3"]) == 0
        elsewhere = capsys.readouterr()
    finally:
        serving.send_signal(stop)
        stopped = serving.wait(30)
    assert stopped == (130 if stop == signal.SIGINT else 0)
    assert served.out == alone.out
    [said] = [line for line in served.err.splitlines() if "service" in line]
    start = f"htmlrag-chat: note: answered by the htmlrag-chat service (pid {serving.pid}, "
    assert said.startswith(start + "running since ") and said.endswith("its models are loaded")
    assert "did not take the question (it runs with other settings" in elsewhere.err
    assert not (runtime / "htmlrag-chat" / place.SOCKET).exists()
    assert not (runtime / "htmlrag-chat" / place.INFO).exists()
