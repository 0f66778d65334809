"""A fresh cache file, and the store opened on it, for each test of the store."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.store.db import Store


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cache.sqlite3"


@pytest.fixture
def store(path: Path):
    with Store.open(path) as opened:
        yield opened
