"""House rules read from the source: no module of the package over 400 lines, but those
allowed longer by name, each with its reason (never a class split by inheritance to fit)."""

from __future__ import annotations

from pathlib import Path

import htmlrag_chat

MAX_LINES = 400
LONGER = {
    # Textual delivers the app's messages and key actions to methods of the App class
    # itself: their work lives in the modules beside it (selection.py, readers.py,
    # searching.py, texts.py, research.py), but each handler is a method here.
    "tui/app.py": 455,
}


def test_no_module_is_over_the_line_limit() -> None:
    root = Path(htmlrag_chat.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 50  # the glob found the real package
    long = {}
    for path in modules:
        name = path.relative_to(root).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LONGER.get(name, MAX_LINES):
            long[name] = lines
    assert long == {}


def test_a_module_allowed_longer_needs_it() -> None:
    """An allowance outlives no reason: the file is still there and over the usual cap."""
    root = Path(htmlrag_chat.__file__).parent
    for name in LONGER:
        assert len((root / name).read_text(encoding="utf-8").splitlines()) > MAX_LINES, name
