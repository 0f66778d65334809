"""``config set KEY VALUE`` and ``config init``: the settings file written from the tree.

``set`` checks the value with the setting's kind before anything is written, then edits
the one line that holds it (or adds it under its table), so the user's comments and layout
survive, and checks that the edited text parses back to what was meant; a file it cannot
edit that way is left alone with an error. Lines are TOML's (ended by LF or CR LF), not
``str.splitlines``'s, for which U+2028 or U+0085 in a comment or a value would end one too.

Every write goes to a temporary file beside the target that replaces it in one step, so a
full disk or a kill mid-write never leaves half a settings file, and a refused value never
touches the file at all. A settings file that is a symbolic link (dotfiles managers make
them) is written through to the file it names, which is replaced in one step while the link
stays. A new file is readable by its owner only: it may hold an API key; a file that holds
one after the edit and that others could read is made its owner's only, with a note.
"""

from __future__ import annotations

import os
import re
import stat
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag_chat.base.atomic import write_text
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.settings.layered import (
    checked,
    file_values,
    parse_toml,
    read_settings_file,
)
from htmlrag_chat.settings.tree import BY_KEY, SECTIONS, SETTINGS, Setting, find

OWNER_ONLY = 0o600

_TABLE = re.compile(r"^\s*\[\s*([A-Za-z0-9_-]+)\s*\]\s*(#.*)?$")
_ANY_TABLE = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class Change:
    """What ``config set`` did: the setting, its new value, and a note for the user when
    the file's permissions were changed."""

    setting: Setting
    value: Any
    note: str | None = None


def set_value(path: Path, key: str, text: str) -> Change:
    """Write setting ``key`` = ``text`` (checked by its kind) into the file at ``path``."""
    try:
        setting = find(key)
    except KeyError as error:
        raise UserError(str(error.args[0])) from None
    value = checked(setting, text, f"{setting.key}", True)
    old = _existing(path)
    data = parse_toml(path, old.encode("utf-8"))
    file_values(path, data)  # a file that is already wrong is said so, not made worse
    new = _edited(old, setting, setting.kind.toml(value))
    expected = {**data, setting.section: {**data.get(setting.section, {}), setting.name: value}}
    try:
        edited = file_values(path, parse_toml(path, new.encode("utf-8")))
    except UserError:
        edited = None
    if edited != file_values(path, expected):
        raise UserError(
            f"{shown_path(path)}: [{setting.section}] is written in a form this command cannot "
            "edit (an inline table, dotted keys or a value over several lines): change it by hand"
        )
    secret = any(BY_KEY[key].secret for key in edited)
    mode, note = _mode(path, secret)
    _write(path, new, mode)
    return Change(setting, value, note)


def _mode(path: Path, secret: bool) -> tuple[int | None, str | None]:
    """The permissions the file gets (None: as it has), and why they change: a file that
    holds a secret and that others may read becomes its owner's only."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:  # not there yet: a new file is its owner's only anyway
        return None, None
    if not secret or not mode & 0o077:
        return None, None
    closed = mode & 0o700 | OWNER_ONLY
    note = (
        f"{shown_path(path)} holds an API key now: made readable by its owner only "
        f"({closed:04o}, was {mode:04o})"
    )
    return closed, note


def init(path: Path, force: bool = False) -> None:
    """Write a settings file with every setting, commented out at its default."""
    if path.exists() and not force:
        raise UserError(
            f"{shown_path(path)} exists: htmlrag-chat config set KEY VALUE changes one setting "
            "(config init --force starts again)"
        )
    _write(path, template())


def template() -> str:
    """Every section and setting with its help, commented out at its default (or, with
    none, at an example value), so that uncommenting a line gives valid TOML."""
    lines = [
        "# htmlrag-chat settings. Options and HTMLRAG_CHAT_<NAME> variables override them;",
        "# `htmlrag-chat config` shows each value in effect and where it comes from.",
    ]
    for section in SECTIONS:
        lines += ["", f"[{section}]"]
        for setting in (s for s in SETTINGS if s.section == section):
            lines += textwrap.wrap(setting.help, 88, initial_indent="# ", subsequent_indent="# ")
            if setting.default in (None, ()):  # still a line that is TOML when uncommented
                example = setting.kind.toml(setting.example)
                lines.append(f"# {setting.name} = {example}  # no default; an example")
            else:
                lines.append(f"# {setting.name} = {setting.kind.toml(setting.default)}")
    return "\n".join(lines) + "\n"


def _existing(path: Path) -> str:
    """The file's text, '' when it is not there yet."""
    data = read_settings_file(path)
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{shown_path(path)}: not UTF-8 text") from None


def _edited(text: str, setting: Setting, value: str) -> str:
    """``text`` with ``name = value`` in place of the old line, else first in its table,
    else in a new table at the end. A line keeps the CR of its CR LF."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    entry = f"{setting.name} = {value}"
    assignment = re.compile(rf"^\s*{re.escape(setting.name)}\s*=")
    start = next(
        (
            i
            for i, line in enumerate(lines)
            if (m := _TABLE.match(line)) and m[1] == setting.section
        ),
        None,
    )
    if start is None:
        lines += ([""] if lines and lines[-1].strip() else []) + [f"[{setting.section}]", entry]
        return "\n".join(lines) + "\n"
    end = next((i for i in range(start + 1, len(lines)) if _ANY_TABLE.match(lines[i])), len(lines))
    for i in range(start + 1, end):
        if assignment.match(lines[i]):
            lines[i] = entry + ("\r" if lines[i].endswith("\r") else "")
            break
    else:
        lines.insert(start + 1, entry)
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str, mode: int | None = None) -> None:
    """The settings file replaced in one step (``atomic``), through a symbolic link to the
    file it names; a new one is its owner's only, since it may hold an API key."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"cannot write {shown_path(path)}: {error.strerror or error}") from None
    write_text(path, text, new_mode=OWNER_ONLY, mode=mode, through_links=True)
