"""Snapshots of the main screens at 120x36, and of an answer at 80x24, 100x30 and 160x50
where the side panes fold by the width (pytest-textual-snapshot; SVGs in __snapshots__).

After a deliberate change of the look, review and accept with ``pytest --snapshot-update``.
The clock is frozen, the answers extractive over BM25 and every screen is taken once the
start-up model loading is over, so every run draws the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static

from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import READY, ChatApp
from htmlrag_chat.tui.transcript import ErrorView
from tests.tui.conftest import QUESTION, SIZE, ask, make_app, options, run, wait_until
from tests.tui.screenshot import draw, readme_picture


def frozen_app(cache: Store, history: Store, tmp_path: Path, **reader: Any) -> ChatApp:
    return make_app(cache, history, options(**reader), tmp_path, clock=lambda: 0.0)


async def loaded(pilot: Pilot[None]) -> None:
    """Models load in a thread at start-up and their notes join the transcript when done:
    wait for that, so that every run draws the same screen (with a cursor that does not
    blink, or it would be drawn or not depending on the time taken)."""
    pilot.app.query_one("#prompt", Input).cursor_blink = False
    status = pilot.app.query_one("#status", Static)
    await wait_until(pilot, lambda: str(status.render()) == READY, 30, "the models to load")


async def answered(pilot: Pilot[None]) -> None:
    await loaded(pilot)
    await ask(pilot, QUESTION["question"])


def test_welcome(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    app = frozen_app(cache, history, tmp_path)
    assert snap_compare(app, terminal_size=SIZE, run_before=loaded)


@pytest.mark.parametrize(
    "size", [(80, 24), (100, 30), SIZE, (160, 50)], ids=("80", "100", "120", "160")
)
def test_answer_with_sources(
    snap_compare: Any, cache: Store, history: Store, tmp_path: Path, size: tuple[int, int]
) -> None:
    """80 columns: the transcript has them all; 100 and 120: the sources beside it; 160:
    both panes."""
    app = frozen_app(cache, history, tmp_path)
    assert snap_compare(app, terminal_size=size, run_before=answered)


def test_sources_brought_back_at_80x24(
    snap_compare: Any, cache: Store, history: Store, tmp_path: Path
) -> None:
    app = frozen_app(cache, history, tmp_path)
    assert snap_compare(app, press=["ctrl+l"], terminal_size=(80, 24), run_before=answered)


def test_the_readme_shows_the_chat_app_as_it_draws(tmp_path: Path) -> None:
    assert readme_picture() == run(draw(tmp_path)), (
        "README.md's chat app is not what the app draws: .venv/bin/python -m tests.tui.screenshot"
    )


def test_help(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    app = frozen_app(cache, history, tmp_path)
    assert snap_compare(app, press=["f1"], terminal_size=SIZE, run_before=loaded)


def test_error_in_the_chat(snap_compare: Any, cache: Store, history: Store, tmp_path: Path) -> None:
    """The model cannot be loaded: said at start-up, and again when a question needs it."""
    app = frozen_app(cache, history, tmp_path, reader="local", model="/no/such/model")

    async def load_failed_then_asked(pilot: Pilot[None]) -> None:
        app.query_one("#prompt", Input).cursor_blink = False
        await wait_until(pilot, lambda: len(app.query(ErrorView)) == 1, 30, "the load error")
        await ask(pilot, QUESTION["question"])

    assert snap_compare(app, terminal_size=SIZE, run_before=load_failed_then_asked)
