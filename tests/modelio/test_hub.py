"""A file named where a model goes is said to be one, before any library reads it: ``--model
README.md`` said "install torch", and after torch a transformers JSON error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.modelio.hub import not_a_model
from tests.conftest import DEMO, import_demo

ROOT = Path(__file__).resolve().parents[2]
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--model", "README.md"], "--model README.md is a file, neither a GGUF file (.gguf) nor"),
        (["--reader", "local", "--model", "README.md"], "--model README.md is a file, neither"),
        (["--pruner", "fused", "--embed-model", "README.md"], "README.md is a file, not a model"),
        (["--pruner", "two-stage", "--gen-model", "README.md"], "README.md is a file, not a"),
    ],
)
def test_a_file_that_is_no_model_is_named_as_such_first(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    options: list[str],
    said: str,
) -> None:
    recording = import_demo(tmp_path)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    pruner = [] if "--pruner" in options else ["--pruner", "bm25"]
    argv = ["--replay-db", str(recording), "ask", QUESTION, *pruner, *options]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert said in err and "config.json and weights" in err
    assert len(err.splitlines()) == 1
    assert "torch" not in err and "JSON" not in err and "server" not in err


def test_a_gguf_file_and_a_folder_are_models(tmp_path: Path) -> None:
    (tmp_path / "reader.gguf").write_bytes(b"GGUF")
    assert not_a_model(str(tmp_path / "reader.gguf"), gguf=True) is None
    assert not_a_model(str(tmp_path / "reader.gguf")) is not None  # not for a pruner
    assert not_a_model(str(tmp_path)) is None
    assert not_a_model("owner/name") is None
