"""The README's picture of the chat app, drawn as text by the real app under Pilot.

The app replays the bundled recording at 100x30 (the history folded, as on such a
terminal) with the options of ``COMMAND`` (which the README quotes), answers the demo
question with its clock frozen, and the screen is written out as plain text.
``tests/tui/test_snapshots.py`` checks that the README holds exactly this; after a
deliberate change of the look, regenerate it:

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

from htmlrag_chat.cli import build_parser
from htmlrag_chat.commands.options import agent_options
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.app import ChatApp
from tests.conftest import import_demo
from tests.tui.conftest import QUESTION, ask

README = Path(__file__).resolve().parents[2] / "README.md"
SIZE = (100, 30)
COMMAND = ["chat", "--replay-db", "demo.sqlite3", "--reader", "extractive", "--pruner", "bm25"]
MARK = (
    "<!-- the chat app at 100x30, drawn by the app itself (tests/tui/screenshot.py; "
    "regenerate: .venv/bin/python -m tests.tui.screenshot) -->"
)
BLOCK = re.compile(re.escape(MARK) + r"\n```text\n(.*?)^```$", re.S | re.M)


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
    """The answered demo question at ``SIZE``, from a recording imported into ``folder``,
    with the options ``COMMAND`` gives (the README's words)."""
    from tests.tui.test_snapshots import loaded

    recorded = import_demo(folder).rename(folder / "demo.sqlite3")
    args = build_parser().parse_args(COMMAND[1:])
    with (
        Store.open(recorded, readonly=True) as cache,
        Store.open(folder / "history.db") as history,  # where the user's cache keeps them
    ):
        session = ChatSession(history)
        app = ChatApp(agent_options(args), cache, session, export_dir=folder, clock=lambda: 0.0)
        async with app.run_test(size=SIZE) as pilot:
            await loaded(pilot)
            await ask(pilot, QUESTION["question"])
            await pilot.pause(0.2)
            return screen_text(app)


def readme_picture() -> str | None:
    found = BLOCK.search(README.read_text(encoding="utf-8"))
    return found.group(1).removesuffix("\n") if found else None


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
