"""``make demo`` as CI or ``| tee`` runs it: stderr a pipe, a fresh HOME and temporary folder."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_demo_piped_prints_the_answer_once_and_writes_nothing_outside_its_folder(
    tmp_path: Path,
) -> None:
    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    env = os.environ | {"HOME": str(home), "TMPDIR": str(scratch)}
    for name in ("HTMLRAG_CHAT_CACHE", "HTMLRAG_CHAT_DERIVED", "XDG_CACHE_HOME"):
        env.pop(name, None)
    done = subprocess.run(  # -o: the .venv this suite runs in is taken as it is
        ["make", "-s", "-o", ".venv/.core", "demo"], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    assert "[  " not in output  # no timestamped trace: --progress only on a terminal
    assert output.count("Sources:") == 1 and "iOS 13 will fix the FaceTime" in done.stdout
    assert output.count("theverge.com") == 1  # the sources listed once
    assert "how to get each: htmlrag-chat models" in done.stderr  # the note on a model
    assert list(home.rglob("*")) == [] and list(scratch.iterdir()) == []
