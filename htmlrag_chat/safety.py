"""Text from the web (and from models that read it) is data: it must not drive the user's
terminal, nor the programs and models that read what we print or store.

``terminal_safe`` removes what a terminal or a text renderer treats as commands rather than
characters: C0 controls but tab and newline (ESC starts every escape sequence), DEL, C1
controls (U+009B is a one-character CSI on some terminals), the bidirectional overrides and
isolates that make displayed text read differently from what it is, and Unicode tag
characters (invisible, a known way to hide instructions for a model) outside the emoji
flags that use them.

``text_safe`` is for text that leaves the program as data (``--json``, the cache): on top of
that, chat-template control tokens (``<|eot_id|>``, ``<|im_start|>``, DeepSeek's full-width
``<\uff5c...\uff5c>``, and their HTML-escaped forms) are broken up so that no later model reads
them as tokens. ``safe_url`` percent-encodes what has no place in a URL, which keeps the
URL pointing at the same page. Letters of every script, accents and emoji are untouched.
"""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Tag characters, but a whole emoji tag sequence (black flag, tag letters, cancel tag).
_TAG_CHARACTERS = re.compile(
    "(\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f)|[\U000e0000-\U000e007f]+"
)
_CONTROL_TOKEN = re.compile("(<|&lt;)([|\uff5c])([^|\uff5c<>&\n]{1,64})([|\uff5c])(>|&gt;)")
# In a URL: controls, whitespace, invisible formatting (zero-width characters, bidi marks
# and overrides, tag characters) and the ASCII characters RFC 3986 never allows raw.
_URL_UNSAFE = re.compile(
    "[\x00-\x20\x7f-\xa0\u00ad\u061c\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064"
    '\u2066-\u206f\u3000\ufeff\U000e0000-\U000e007f<>"`{}|\\\\^]'
)


def terminal_safe(text: str) -> str:
    return _TAG_CHARACTERS.sub(_keep_flags, _UNSAFE.sub("", text))


def _keep_flags(match: re.Match[str]) -> str:
    return match.group(1) or ""


def defuse_control_tokens(text: str) -> str:
    """``<|eot_id|>`` -> ``< |eot_id| >``: still readable, never a token."""
    return _CONTROL_TOKEN.sub(r"\1 \2\3\4 \5", text)


def text_safe(text: str) -> str:
    """Web text as data: terminal-safe, with control tokens defused."""
    return defuse_control_tokens(terminal_safe(text))


def one_line(text: str) -> str:
    """Web text for a one-line place (a title, a list entry): safe, whitespace collapsed."""
    return " ".join(text_safe(text).split())


def safe_url(url: str) -> str:
    """A URL with the characters that could hide or fake part of it percent-encoded."""
    return _URL_UNSAFE.sub(_percent_encode, url.strip())


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group(0).encode("utf-8"))


def json_safe(value: Any) -> Any:
    """A JSON-ready value with ``text_safe`` applied to every string in it."""
    if isinstance(value, str):
        return text_safe(value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value
