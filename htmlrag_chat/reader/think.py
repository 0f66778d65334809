"""Reasoning models think aloud first (``<think>...</think>``): that is never the answer.

DeepSeek-R1, Qwen3 and their distillations stream a block of reasoning before the reply;
some servers pass it on as ordinary content. It must reach neither the screen, nor the
citation check, nor the stored history that later prompts are built from. A block that is
never closed (the model ran out of tokens while thinking) hides everything after it.

``ThinkFilter`` works on a stream: it holds back only what could still be the start of a
tag, so ordinary text passes through at once.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)


def strip_think(text: str) -> str:
    """``text`` without its think blocks (an unterminated one runs to the end)."""
    return _BLOCK.sub("", text)


class ThinkFilter:
    """Streamed text in, the same text out without think blocks."""

    def __init__(self) -> None:
        self._pending = ""
        self._thinking = False
        self.thought = 0  # characters of reasoning dropped

    def feed(self, chunk: str) -> str:
        self._pending += chunk
        shown: list[str] = []
        while self._pending:
            tag = CLOSE if self._thinking else OPEN
            found = self._pending.lower().find(tag)
            if found < 0:
                cut = len(self._pending) - _partial_tag(self._pending, tag)
                self._out(self._pending[:cut], shown)
                self._pending = self._pending[cut:]
                break
            self._out(self._pending[:found], shown)
            self._pending = self._pending[found + len(tag) :]
            self._thinking = not self._thinking
        return "".join(shown)

    def finish(self) -> str:
        """What was held back as a possible tag; nothing of an unterminated block."""
        rest, self._pending = self._pending, ""
        if self._thinking:
            self.thought += len(rest)
            return ""
        return rest

    def _out(self, text: str, shown: list[str]) -> None:
        if self._thinking:
            self.thought += len(text)
        else:
            shown.append(text)


def _partial_tag(text: str, tag: str) -> int:
    """How many characters at the end of ``text`` could be the start of ``tag``."""
    lowered = text.lower()
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(lowered[-size:]):
            return size
    return 0
