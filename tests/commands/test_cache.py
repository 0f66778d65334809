"""``cache import``: a failed import leaves no cache file it created behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from tests.conftest import import_demo


@pytest.mark.parametrize("content", [None, b"not a recording\n"], ids=["missing", "malformed"])
def test_a_failed_import_creates_no_cache_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None
) -> None:
    recording = tmp_path / "recording.jsonl"
    if content is not None:
        recording.write_bytes(content)
    cache = tmp_path / "new.db"
    assert main(["--cache", str(cache), "cache", "import", "--jsonl", str(recording)]) == 3
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"htmlrag-chat: {recording}") or "cannot read" in line
    assert list(tmp_path.iterdir()) == ([recording] if content else [])


def test_a_failed_import_into_an_existing_cache_leaves_it_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = import_demo(tmp_path)
    before = cache.read_bytes()
    assert main(["--cache", str(cache), "cache", "import", "--jsonl", str(tmp_path / "no")]) == 3
    assert cache.exists() and cache.read_bytes() == before
