"""A user's paths: ``~`` expanded in one place, and any path shown on one line.

Every path a user gives (an option, a variable, the settings file: ``--docs``, ``--cache``,
``--replay-db``, ``--model``, ``--tokenizer``, ``$HTMLRAG_CHAT_CACHE``, ...) is expanded by
``expand_user``. ``~nosuchuser/x`` or a ``~`` with no home to stand for is left as typed by
``os.path.expanduser`` and raised on by ``Path.expanduser``; here it is a one-line usage
error naming the path, wherever the path is read.

``shown_path`` is how a path goes into a note or an error. File names come from other
people (an archive, a shared folder) and may hold anything but ``/`` and NUL: a newline
would start a line that looks like the program's own (``htmlrag-chat: note: all documents
verified safe``), a bidi override would make the name read backwards, and bytes that are
not UTF-8 (Python keeps them as lone surrogates, which nothing can print, store or send)
would crash whatever writes the message. Such characters are shown as escapes (``\\n``,
``\\u202e``, ``\\xe9``); letters of every script stay as they are.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from htmlrag_chat.base.errors import UserError

# What a name may hold that is not one printable line: controls, format characters
# (bidi marks and overrides, zero-width ones, tags), line and paragraph separators, and
# the lone surrogates of bytes that are not UTF-8.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NOT_ASCII_OR_CONTROL = re.compile(r"[^\x20-\x7e]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def expand_user(path: str | os.PathLike[str], where: str = "") -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; one that names no home here is
    a ``UserError`` (exit 2) naming ``where`` (an option or variable) and the path."""
    text = os.fspath(path)
    problem = unexpandable(text)
    if problem is not None:
        raise UserError(f"{where} {problem}" if where else problem)
    return Path(os.path.expanduser(text))


def unexpandable(text: str) -> str | None:
    """Why the ``~`` that starts ``text`` cannot be expanded (None: it can, or there is
    none), in words that start with the path."""
    if not text.startswith("~"):
        return None
    if not os.path.expanduser(text).startswith("~"):
        return None
    head = text.split("/", 1)[0]
    if head == "~":
        return f"{shown_path(text)}: ~ names no home folder here (HOME is not set)"
    return f"{shown_path(text)}: {shown_path(head)} names no user on this system"


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as one line of printable text: what could break or disguise the line is
    an escape (``caf\\xe9.txt``, ``a\\nb.md``, ``\\u202etxt.exe``)."""
    return _NOT_ASCII_OR_CONTROL.sub(_escape, os.fspath(path))


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    if unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (``surrogateescape``)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
