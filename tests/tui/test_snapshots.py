"""Snapshots of the main screens at 120x36 (pytest-textual-snapshot; SVGs in __snapshots__).

After a deliberate change of the look, review and accept with ``pytest --snapshot-update``.
The clock is frozen and the answers extractive over BM25, so every run draws the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from tests.tui.conftest import QUESTION, SIZE, ask, make_app, options


def frozen_app(cache: Store, history: Store, tmp_path: Path, **reader: Any) -> ChatApp:
    return make_app(cache, history, options(**reader), tmp_path, clock=lambda: 0.0)


async def answered(pilot: Pilot[None]) -> None:
    await ask(pilot, QUESTION["question"])


def test_welcome(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    assert snap_compare(frozen_app(cache, history, tmp_path), terminal_size=SIZE)


def test_answer_with_sources(
    snap_compare: Any, cache: Store, history: Store, tmp_path: Path
) -> None:
    app = frozen_app(cache, history, tmp_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=answered)


def test_help(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    assert snap_compare(frozen_app(cache, history, tmp_path), press=["f1"], terminal_size=SIZE)


def test_error_in_the_chat(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    app = frozen_app(cache, history, tmp_path, reader="local", model="/no/such/model")
    assert snap_compare(app, terminal_size=SIZE, run_before=answered)
