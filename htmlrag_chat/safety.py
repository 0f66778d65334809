"""Text from the web (and from models that read it) must not drive the user's terminal.

Removes what a terminal or a text renderer treats as commands rather than characters: C0
controls but tab and newline (ESC starts every escape sequence), DEL, C1 controls (U+009B is
a one-character CSI on some terminals) and the bidirectional overrides and isolates that can
make displayed text read differently from what it is.
"""

from __future__ import annotations

import re

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    return _UNSAFE.sub("", text)


def one_line(text: str) -> str:
    """Web text for a one-line place (a title, a list entry): safe, whitespace collapsed."""
    return " ".join(terminal_safe(text).split())
