"""Reasoning models think aloud first: that is never the answer.

DeepSeek-R1, QwQ, Qwen3, gpt-oss and their distillations write their reasoning before the
reply, and some servers pass it on as ordinary content. It must reach neither the screen,
nor the citation check, nor the stored history that later prompts are built from. The
forms it comes in:

- a think block, ``<think>...</think>`` (also ``<thinking>``, any case, with blank space
  before the ``>`` as in ``<think >``; but not ``< think >``, which is how ``safety`` defuses
  a tag in page text, so that a model quoting a page cannot end a block); blocks nest
  (``<think>a<think>b</think>c</think>``), but an opening tag that only repeats the one just
  opened (nothing but blank space between them) is the same block;
- the block opened by the chat template, not by the model (DeepSeek-R1's template ends with
  ``<think>``): the reply is ``reasoning...</think>answer``. A reader that knows it says so
  by streaming the opening tag first (``OPEN``): the in-process readers see their prompt
  (``opens_reasoning``), a server's model is known by its name (``opened_by_template``).
  Otherwise the closing tag that arrives with no block open (``ThinkFilter.restarted``)
  says that everything before it was reasoning, and the answer starts again;
- the harmony format of gpt-oss: messages ``<|channel|>NAME<|message|>...<|end|>``, of
  which only the ``final`` channel is the answer (``analysis`` and ``commentary`` are not).

A block that is never closed (the model ran out of tokens while thinking) hides everything
after it. ``ThinkFilter`` works on a stream: it holds back only what could still be the
start of a tag, so ordinary text passes through at once.
"""

from __future__ import annotations

import re

OPEN = "<think>"
# A tag: a think block's (group 1 is "/" when it closes) or a harmony token's (group 2).
_TAG = re.compile(
    r"<(/?)think(?:ing)?\s{0,8}>"
    r"|<\|(start|end|message|channel|return|call|constrain)\|>",
    re.IGNORECASE,
)
# What the end of a piece may be the start of: a think tag or a harmony token, cut short.
_PARTIAL = re.compile(
    r"</?(?:t(?:h(?:i(?:n(?:k(?:i(?:n(?:g)?)?)?)?)?)?)?)?\s{0,8}\Z"
    r"|<\|[a-z]{0,9}\|?\Z",
    re.IGNORECASE,
)
_LONGEST_PARTIAL = 32
_LONGEST_CHANNEL = 64  # a harmony channel's name ("commentary to=functions.search")
# Servers' names of the reasoning models whose chat template opens the think block, so that
# the reply starts inside it: DeepSeek-R1 and its distillations, QwQ.
_OPENED_BY_TEMPLATE = re.compile(r"deepseek[-_ ]?r1|\br1[-_ ]distill|\bqwq\b", re.IGNORECASE)


def strip_think(text: str) -> str:
    """``text`` without its reasoning (an unterminated block runs to the end)."""
    thinking = ThinkFilter()
    return thinking.feed(text) + thinking.finish()


def opens_reasoning(prompt: str) -> bool:
    """Whether a rendered prompt ends inside a think block its template opened."""
    tail = prompt[-64:].rstrip()
    last = next(reversed(list(_TAG.finditer(tail))), None)
    return last is not None and last.end() == len(tail) and last[2] is None and not last[1]


def opened_by_template(model: str) -> bool:
    """Whether a server's model is one whose template opens the think block (by name:
    a server does not say what its template ends with)."""
    return _OPENED_BY_TEMPLATE.search(model) is not None


class ThinkFilter:
    """Streamed text in, the same text out without its reasoning.

    ``restarted`` turns true when a closing tag comes with no block open after text was
    returned: that text was reasoning (the template opened the block), and the caller takes
    it back; what ``feed`` returns from then on is the answer."""

    def __init__(self) -> None:
        self._pending = ""
        self._depth = 0  # think blocks open
        self._fresh = False  # nothing but blank space since the last opening tag
        self._returned = False  # text was returned, and not taken back since
        self._header = False  # harmony: inside a message's header (role, channel)
        self._channel: str | None = None  # harmony: the channel being read in a header
        self._final: bool | None = None  # harmony: in the final channel (None: no harmony)
        self.restarted = False
        self.thought = 0  # characters of reasoning dropped

    @property
    def reasoning(self) -> bool:
        """Whether the text now arriving is reasoning: in an open block, or in a harmony
        header or message that is not the final one."""
        return self._depth > 0 or self._header or self._final is False

    def feed(self, chunk: str) -> str:
        text = self._pending + chunk
        shown: list[str] = []
        start = 0
        for tag in _TAG.finditer(text):
            self._out(text[start : tag.start()], shown)
            self._apply(tag, shown)
            start = tag.end()
        rest = text[start:]
        partial = _PARTIAL.search(rest, max(0, len(rest) - _LONGEST_PARTIAL))
        cut = partial.start() if partial else len(rest)
        self._out(rest[:cut], shown)
        self._pending = rest[cut:]
        return self._return(shown)

    def finish(self) -> str:
        """What was held back as a possible tag; nothing of an unterminated block."""
        rest, self._pending = self._pending, ""
        shown: list[str] = []
        self._out(rest, shown)
        return self._return(shown)

    def _return(self, shown: list[str]) -> str:
        text = "".join(shown)
        self._returned = self._returned or bool(text)
        return text

    def _apply(self, tag: re.Match[str], shown: list[str]) -> None:
        if tag[2] is not None:
            self._harmony(tag[2].lower())
        elif not tag[1]:  # an opening tag: a new block, unless it repeats the one just opened
            self._depth += not self._fresh
            self._fresh = True
        elif self._depth > 0:
            self._depth -= 1
            self._fresh = False
        else:  # the end of a block the template opened: everything so far was reasoning
            self.restarted = self.restarted or self._returned
            self._returned = False
            self.thought += sum(map(len, shown))
            shown.clear()

    def _harmony(self, token: str) -> None:
        """``<|start|>role<|channel|>name<|message|>text<|end|>``: the header is never
        shown, and a message's text only in the final channel."""
        if token == "message":
            name = (self._channel or "").split()
            self._header, self._channel = False, None
            self._final = not name or name[0].lower() == "final"
        elif token == "constrain":  # the rest of the header says the message's format
            return
        else:  # start, channel, or the end of a message: a header (or nothing) comes next
            self._header, self._final = True, False
            self._channel = "" if token == "channel" else None

    def _out(self, text: str, shown: list[str]) -> None:
        if not text:
            return
        if self.reasoning:
            self.thought += len(text)
            if self._channel is not None:
                self._channel = (self._channel + text)[:_LONGEST_CHANNEL]
            self._fresh = self._fresh and not text.strip()
            return
        shown.append(text)
        self._fresh = False
