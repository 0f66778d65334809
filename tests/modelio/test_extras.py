"""What an extra's install line says: the command, and what it costs besides the download."""

from __future__ import annotations

import re
from pathlib import Path

from htmlrag_chat.modelio.extras import EXTRAS, install_line

ROOT = Path(__file__).resolve().parents[2]


def test_the_gguf_extra_is_suggested_with_its_compile_time_and_the_prebuilt_wheels() -> None:
    """A newcomer pasted the hint and waited 23 silent minutes: the line says so first."""
    line = install_line("gguf")
    assert "[gguf]" in line
    assert re.search(r"compiles llama\.cpp .*\d+-\d+ minutes", line)
    assert "prebuilt CPU wheels in docs/install.md" in line
    install = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert "https://abetlen.github.io/llama-cpp-python/whl/cpu" in install


def test_extras_that_only_download_say_nothing_more() -> None:
    for extra in EXTRAS.keys() - {"gguf"}:
        assert "(" not in install_line(extra).split("]")[-1], extra
