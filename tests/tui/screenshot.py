"""The README's picture of the chat app, drawn as text by the real app under Pilot.

The app replays the bundled recording at 100x30 (the history folded, as on such a
terminal), answers the demo question with the extractive reader over BM25 with its clock
frozen, and the screen is written out as plain text. ``tests/tui/test_snapshots.py`` checks
that the README holds exactly this; after a deliberate change of the look, regenerate it:

    .venv/bin/python -m tests.tui.screenshot
"""

from __future__ import annotations

import asyncio
import io
import re
import tempfile
from pathlib import Path

from rich.console import Console
from textual.app import App

from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.tui.conftest import QUESTION, ask, make_app, options

README = Path(__file__).resolve().parents[2] / "README.md"
SIZE = (100, 30)
MARK = (
    "<!-- the chat app at 100x30, drawn by the app itself (tests/tui/screenshot.py; "
    "regenerate: .venv/bin/python -m tests.tui.screenshot) -->"
)
BLOCK = re.compile(re.escape(MARK) + r"\n```text\n(.*?)\n```", re.S)


def screen_text(app: App[None]) -> str:
    """What the terminal shows, as text: the compositor's lines without their styles."""
    width, height = app.size
    console = Console(
        width=width, height=height, file=io.StringIO(), force_terminal=True,
        color_system=None, record=True, legacy_windows=False, safe_box=False,
    )  # fmt: skip
    console.print(app.screen._compositor.render_update(full=True))
    return "\n".join(line.rstrip() for line in console.export_text(styles=False).splitlines())


async def draw(folder: Path) -> str:
    """The answered demo question at ``SIZE``, from a recording imported into ``folder``."""
    from tests.tui.test_snapshots import loaded

    recorded = import_demo(folder)
    with (
        Store.open(recorded, readonly=True) as cache,
        Store.open(folder / "history.db") as history,
    ):
        app = make_app(cache, history, options(), folder, clock=lambda: 0.0)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot)
            await ask(pilot, QUESTION["question"])
            await pilot.pause(0.2)
            return screen_text(app)


def readme_picture() -> str | None:
    found = BLOCK.search(README.read_text(encoding="utf-8"))
    return found.group(1) if found else None


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        picture = asyncio.run(draw(Path(folder)))
    text = README.read_text(encoding="utf-8")
    if BLOCK.search(text) is None:
        raise SystemExit(f"README.md has no block marked {MARK}")
    README.write_text(BLOCK.sub(lambda _: f"{MARK}\n```text\n{picture}\n```", text), "utf-8")
    print(f"README.md: the chat app redrawn at {SIZE[0]}x{SIZE[1]}")


if __name__ == "__main__":
    main()
