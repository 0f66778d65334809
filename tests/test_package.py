"""House rules read from the source: no module of the package over 400 lines."""

from __future__ import annotations

from pathlib import Path

import htmlrag_chat

MAX_LINES = 400


def test_no_module_is_over_the_line_limit() -> None:
    modules = sorted(Path(htmlrag_chat.__file__).parent.rglob("*.py"))
    assert len(modules) > 50  # the glob found the real package
    long = {
        str(path.relative_to(Path(htmlrag_chat.__file__).parent)): lines
        for path in modules
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}
