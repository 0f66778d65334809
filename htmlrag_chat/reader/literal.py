"""What in an answer is not the answer's own prose: code, and text quoted from a source.

Answers are Markdown. Citation markers like ``[1]`` are read in prose only: ``arr[0]`` in a
code span and ``x[1]`` in a fenced block are code, and a sentence the extractive reader
quotes from a page keeps the page's own footnote markers (``Paris [3]``) as text. So:

- ``CodeScanner`` tells prose from what is literal in Markdown (code, and characters escaped
  with a backslash: ``\\[3\\]`` is text) as it arrives in pieces, deciding each character
  as soon as nothing that follows can change it (a stream must not wait long);
- ``Quoted`` marks a reader chunk as source text to show verbatim, never read for citations;
- ``escape_markdown`` writes such text so that Markdown shows it as it is (``\\[3\\]``), and
  ``unescape_markdown`` turns the Markdown back into the text it shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Everything but the characters that can start or end code, end a line, or escape.
_PLAIN = re.compile(r"[^`~\\\n \t]+")
# Inline specials, always escaped in quoted text; a line-start construct only at its start.
_INLINE_SPECIALS = re.compile(r"([\\`*_\[\]<>&~|!])")
# What makes the renderer link an address ("https:", "www."): its last character escaped.
_LINK_START = re.compile(r"(?:[a-z0-9+.-]+:(?=//)|www\.)", re.IGNORECASE)
_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+(?=[.)]))")
_TICK_OR_NEWLINE = re.compile(r"[`\n]")
_ESCAPABLE = re.compile(r"[!-/:-@\[-`{-~]")  # CommonMark: any ASCII punctuation
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


class Quoted(str):
    """A chunk of a reader's answer that is source text quoted verbatim: shown as it is,
    never searched for citations (its own ``[3]`` is the page's footnote, not source 3)."""

    __slots__ = ()


def escape_markdown(text: str) -> str:
    """``text`` as Markdown that renders as exactly ``text`` (one line, in a list item).
    Web addresses are escaped out of being links too: a quote is text."""
    escaped = _INLINE_SPECIALS.sub(r"\\\1", text)
    escaped = _LINK_START.sub(lambda m: m[0][:-1] + "\\" + m[0][-1], escaped)
    return _LINE_START.sub(lambda m: m[1] + _escape_start(m[2]), escaped, count=1)


def _escape_start(start: str) -> str:
    return start + "\\" if start[0].isdigit() else "\\" + start  # "1\." and "\#"


def unescape_markdown(text: str) -> str:
    """The text Markdown shows for ``text``'s backslash escapes (``\\[3\\]`` -> ``[3]``)."""
    return _ESCAPED.sub(r"\1", text)


@dataclass
class CodeScanner:
    """Splits Markdown arriving in pieces into literal text and prose, keeping back only
    what the next piece could still change. Literal is code and escaped characters.

    Code is a fenced block (a line that starts, after any indentation, with three or more
    backticks or tildes, up to a line of at least as many of the same) or an inline span (a
    run of backticks up to the next run of the same length on the same line; a run with no
    such closer is plain text). CommonMark lets a span cross a line break inside a paragraph;
    answers rarely do, and a line is as long as a stream should wait. Outside code a
    backslash escapes the ASCII punctuation after it: the pair is literal (``\\[`` starts no
    citation, ``\\``` no code), while ``\\\\[1]`` is an escaped backslash and a citation.
    """

    fence: tuple[str, int] | None = None  # the open fence's character and length
    in_opening_line: bool = False  # in a fence's first line (its info string)
    fence_line: str = ""  # the current line inside a fence, to recognise its closing line
    line_start: bool = True  # nothing but spaces and tabs so far on this line
    pending: str = ""  # text not decided yet, scanned again with the next piece

    def feed(self, text: str, final: bool = False) -> list[tuple[bool, str]]:
        """The decided part of what is pending plus ``text``, as (is_literal, piece) pairs
        in order; ``final``: the text ends here, so everything is decided."""
        text, self.pending = self.pending + text, ""
        pieces: list[tuple[bool, str]] = []

        def emit(code: bool, piece: str) -> None:
            if pieces and pieces[-1][0] == code:
                pieces[-1] = (code, pieces[-1][1] + piece)
            elif piece:
                pieces.append((code, piece))

        at = 0
        while at < len(text):
            step = self._fenced(text, at) if self.fence else self._prose(text, at, final)
            if step is None:  # undecided until more text comes
                self.pending = text[at:]
                break
            code, end = step
            emit(code, text[at:end])
            at = end
        return pieces

    def _fenced(self, text: str, at: int) -> tuple[bool, int]:
        """Inside a fence: code up to the end of the line, where it may close."""
        newline = text.find("\n", at)
        end = len(text) if newline < 0 else newline + 1
        self.fence_line += text[at:end]
        if newline >= 0:
            char, length = self.fence or ("`", 3)
            line = self.fence_line.strip()
            if not self.in_opening_line and len(line) >= length and line == char * len(line):
                self.fence = None
            self.in_opening_line, self.fence_line, self.line_start = False, "", True
        return True, end

    def _prose(self, text: str, at: int, final: bool) -> tuple[bool, int] | None:
        """Outside a fence: one step of prose, or a whole code span or fence opening."""
        char = text[at]
        if char == "\n":
            self.line_start = True
            return False, at + 1
        if char in " \t":
            return False, at + 1
        if char == "\\":
            if at + 1 == len(text) and not final:
                return None
            self.line_start = False
            if _ESCAPABLE.match(text, at + 1):
                return True, at + 2
            return False, at + 1
        if char not in "`~":
            self.line_start = False
            match = _PLAIN.match(text, at)
            return False, match.end() if match else at + 1
        run_end = _run_end(text, at)
        if run_end == len(text) and not final:
            return None  # the run may go on
        run = run_end - at
        starts_line, self.line_start = self.line_start, False
        if starts_line and run >= 3:
            line_end = text.find("\n", run_end)
            if line_end < 0 and not final:
                self.line_start = True
                return None  # "```" followed by a backtick on its line is inline code
            if char == "~" or "`" not in text[run_end : line_end if line_end >= 0 else None]:
                self.fence, self.in_opening_line, self.fence_line = (char, run), True, ""
                return True, run_end
        if char == "~":
            return False, run_end
        close = _closing_run(text, run_end, run, final)
        if close is None:
            self.line_start = starts_line
            return None
        return (True, close) if close > 0 else (False, run_end)


def _run_end(text: str, at: int) -> int:
    end = at
    while end < len(text) and text[end] == text[at]:
        end += 1
    return end


def _closing_run(text: str, at: int, length: int, final: bool) -> int | None:
    """Where a code span opened by ``length`` backticks ends (just after its closing run),
    0 when this line has no closing run, None when it cannot be known yet."""
    while True:
        found = _TICK_OR_NEWLINE.search(text, at)
        if found is None:
            return 0 if final else None
        if found[0] == "\n":
            return 0
        end = _run_end(text, found.start())
        if end == len(text) and not final:
            return None
        if end - found.start() == length:
            return end
        at = end
