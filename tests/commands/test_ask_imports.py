"""A cold ``ask`` on the CPU imports none of the libraries whose import alone costs seconds
(torch, transformers, sentence-transformers): the process as a user runs it, in a
subprocess on the bundled recording, with the real tiny tokenizer and the bundled MiniLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from htmlrag_chat.reader.extractive import HEADER
from tests.conftest import DEMO, import_demo

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "sentence_transformers")
# The CLI as ``python -m htmlrag_chat`` runs it, saying at exit which of HEAVY it imported.
IMPORTS_AT_EXIT = """
import atexit, runpy, sys
loaded = lambda: sorted(name for name in {heavy!r} if name in sys.modules)
atexit.register(lambda: print("heavy:", loaded(), file=sys.stderr))
sys.argv = ["htmlrag-chat", *sys.argv[1:]]
runpy.run_module("htmlrag_chat", run_name="__main__", alter_sys=True)
"""


def test_an_extractive_replay_imports_no_torch_or_transformers(
    tiny_tokenizer_dir: Path, tmp_path: Path
) -> None:
    """The whole cold question: the missing pruner's notice, the token counter and the
    fused stage's embeddings (the side cache starts empty, so the model runs)."""
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    argv = ["--cache", str(import_demo(tmp_path)), "ask", question, "--replay"]
    argv += ["--reader", "extractive", "--progress", "--tokenizer", str(tiny_tokenizer_dir)]
    # The CPU by name: where a GPU driver is installed, auto asks torch
    # (tests/modelio/test_device.py).
    argv += ["--device", "cpu"]
    env = os.environ | {"PYTHONPATH": str(ROOT), "HTMLRAG_CHAT_DERIVED": str(tmp_path / "d.db")}
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_AT_EXIT.format(heavy=HEAVY), *argv],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(HEADER)
    assert "generative pruner" in done.stderr  # not here: a notice, and the fused stage alone
    (scored,) = [line for line in done.stderr.splitlines() if "fused/score done" in line]
    assert int(scored.rsplit("encoded ", 1)[1].split(",")[0]) > 0  # the model did run
    assert done.stderr.splitlines()[-1] == "heavy: []"
