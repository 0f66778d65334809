"""``ask --reader local --model FILE.gguf``: a real model answers offline in this process
(llama.cpp), the demo question from the bundled recording, its budget the CPU default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from tests.conftest import DEMO, import_demo
from tests.smollm2 import smollm2_gguf

QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]


def test_a_gguf_file_answers_offline_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.db"))
    recording = import_demo(tmp_path)
    capsys.readouterr()
    gguf = smollm2_gguf()
    argv = ["--replay-db", str(recording), "ask", "--reader", "local", "--model", str(gguf)]
    argv += ["--pruner", "bm25", "--rounds", "1", "--max-tokens", "32", "--json", "--progress"]
    assert main([*argv, QUESTION]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert (record["reader"], record["model"]) == ("gguf", gguf.name)
    assert record["answer"] and record["sources"]
    checked = [sentence for sentence in record["sentences"] if sentence["checked"]]
    backed = bool(checked) and not any(sentence["unsupported"] for sentence in checked)
    assert record["cited"] is backed and len(record["flags"]) == sum(
        sentence["unsupported"] for sentence in checked
    )
    assert "approximation" not in captured.err  # counted with the GGUF's own vocabulary
    prefills = [line for line in captured.err.splitlines() if "reader: prefilling" in line]
    tokens = int(prefills[-1].split("prefilling ")[1].split(" tokens")[0].replace(",", ""))
    # The answer read sources pruned to the CPU default budget of 1024 tokens, not 2048.
    assert 600 < tokens < 2048
