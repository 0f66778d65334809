"""A fresh cache file and the store opened on it, for each test of the store; ``sql`` to
look at the file through a connection of the test's own."""

from __future__ import annotations

import sqlite3
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


def sql(path: Path, statement: str) -> list[tuple]:
    """Run one statement on the file with a connection of our own."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            return conn.execute(statement).fetchall()
    finally:
        conn.close()
