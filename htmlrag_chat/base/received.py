"""JSON and its text as another program sends it: a reader server, a search API.

JSON escapes characters as UTF-16 code units, so a server that cuts its text by those units
(an emoji split into ``"\\ud83d"`` and ``"\\ude00"`` across two answer deltas) or a model id
holding half a pair decodes to Python strings with lone surrogates. Python keeps them, but
nothing downstream can: printing, SQLite and the tokenizers all encode to UTF-8 and raise
``UnicodeEncodeError``. So text from elsewhere is made whole here, once, where it comes in:
halves that pair up are joined (also across the deltas of one stream, ``Halves``) and the
rest become U+FFFD, as a UTF-8 decoder treats a broken sequence. ``loads`` does it for every
string of a JSON document, and turns JSON nested deeper than the recursion limit (which
``json`` reads by recursion) into the ``ValueError`` that any other malformed JSON is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
_HIGH = ("\ud800", "\udbff")


def whole_text(text: str) -> str:
    """``text`` with every surrogate pair joined into its character and every lone
    surrogate replaced by U+FFFD; text without surrogates is returned as it is."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


@dataclass
class Halves:
    """``whole_text`` for text that arrives in pieces: a high surrogate that ends a piece
    waits for the next one, whose low surrogate completes it."""

    pending: str = ""

    def feed(self, piece: str) -> str:
        text = self.pending + piece
        held = bool(text) and _HIGH[0] <= text[-1] <= _HIGH[1]
        self.pending = text[-1] if held else ""
        return whole_text(text[:-1] if held else text)

    def finish(self) -> str:
        """What is still held: a half that no piece completed, as U+FFFD."""
        text, self.pending = self.pending, ""
        return whole_text(text)


class TooDeep(ValueError):
    """JSON nested deeper than the parser's recursion allows."""


def loads(data: str | bytes, whole: bool = True) -> Any:
    """A JSON document, its strings (keys included) made whole unless ``whole`` is False
    (a streamed delta whose halves ``Halves`` joins); ``ValueError`` for anything that is
    not JSON, ``TooDeep`` (one) for JSON nested too deeply."""
    try:
        value = json.loads(data)
        return _whole(value) if whole else value
    except RecursionError:  # json nests by recursion: 100,000 "[" exhaust the stack
        raise TooDeep("JSON nested too deeply") from None


def _whole(value: Any) -> Any:
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {whole_text(key): _whole(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole(item) for item in value]
    return value
