"""The side panes fold by the terminal's width, and the keys in the footer bring them back."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from htmlrag_chat.tui.panels import HistoryPanel, SourcesPanel
from tests.tui.conftest import QUESTION, ask, make_app, options, run


def shown(app: ChatApp) -> tuple[bool, bool]:
    return app.query_one(HistoryPanel).display, app.query_one(SourcesPanel).display


@pytest.mark.parametrize(
    ("size", "panes", "columns"),
    [((80, 24), (False, False), 80), ((100, 30), (False, True), 66), ((160, 50), (True, True), 96)],
)
def test_the_width_decides_which_side_panes_show(
    cache: Store,
    history: Store,
    tmp_path: Path,
    size: tuple[int, int],
    panes: tuple[bool, bool],
    columns: int,
) -> None:
    """No key pressed: at 80 columns the transcript has them all, at 100 it shares them with
    the sources, from 140 with the history too."""

    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            assert shown(app) == panes
            assert app.query_one("#chat").size.width == columns

    run(scenario())


def test_on_80_columns_the_keys_in_the_footer_bring_the_panes_back(
    cache: Store, history: Store, tmp_path: Path
) -> None:
    async def scenario() -> None:
        app = make_app(cache, history, options(), tmp_path)
        async with app.run_test(size=(80, 24)) as pilot:
            await ask(pilot, QUESTION["question"])
            # Both keys are drawn in the footer, inside the 80 columns.
            drawn = {
                (key.key, key.description)
                for key in app.query_one(Footer).query(FooterKey)
                if key.region.right <= 80 and key.region.width > 0
            }
            assert {("ctrl+l", "Sources"), ("ctrl+o", "History")} <= drawn
            assert shown(app) == (False, False) and app.query_one("#chat").size.width == 80
            await pilot.press("ctrl+l")
            await pilot.pause()
            sources = app.query_one(SourcesPanel)
            assert shown(app) == (False, True) and sources.has_focus
            assert sources.option_count > 0 and app.query_one("#chat").size.width >= 40
            await pilot.press("ctrl+l")  # pressed in the pane: hidden again
            await pilot.pause()
            assert shown(app) == (False, False) and app.query_one("#prompt").has_focus
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert shown(app) == (True, False) and app.query_one(HistoryPanel).has_focus
            await pilot.press("escape")  # back to the question box, the panes by the width
            await pilot.pause()
            assert shown(app) == (False, False) and app.query_one("#prompt").has_focus

    run(scenario())
