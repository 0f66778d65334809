"""What the reader's tests share: an empty Hugging Face cache, offline, so that nothing of
this machine's is found and nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache
