"""Where settings come from: the built-in default, then the config file, then the
environment, then options, each overriding the one before, each value checked by its
setting's kind whatever its source, and each value's origin kept for ``config``.

The file is ``--config``, else ``$HTMLRAG_CHAT_CONFIG``, else ``config.toml`` in the user
config directory. Only the last may be missing: a file named on purpose that is not there
is an error, not silently the defaults. It is read once per run, and at most
``MAX_CONFIG_BYTES`` of it; only a regular file is read (a FIFO would block every command
until someone writes to it, ``/dev/zero`` never ends), which is checked on the opened file
itself, opened without waiting; TOML nested deeper than the parser's recursion allows is one
line, not a ``RecursionError``.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.settings.tree import BY_KEY, SECTIONS, SETTINGS, Setting

MAX_CONFIG_BYTES = 1 << 20  # a settings file is a few hundred bytes; a megabyte is a mistake
CONFIG_ENV = "HTMLRAG_CHAT_CONFIG"


@dataclass(frozen=True)
class Origin:
    """Where a value came from: ``default``, ``file``, ``environment`` or ``option``, and
    ``name``: the file's path, the variable or the option (None for a default)."""

    source: str
    name: str | None = None

    def __str__(self) -> str:
        return self.source if self.name is None else f"{self.source} {self.name}"


DEFAULT = Origin("default")


@dataclass(frozen=True)
class Resolved:
    """Every setting's value (by ``section.name``) and where it came from."""

    values: dict[str, Any]
    origins: dict[str, Origin]
    file: Path
    file_origin: Origin

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def section(self, name: str) -> dict[str, Any]:
        """The values of one section, by setting name (the fields of its dataclass)."""
        prefix = name + "."
        return {
            key.removeprefix(prefix): v for key, v in self.values.items() if key.startswith(prefix)
        }


def default_config_path() -> Path:
    return platformdirs.user_config_path("htmlrag-chat") / "config.toml"


def config_origin(option: Path | None = None) -> tuple[Path, Origin]:
    """The settings file: ``--config``, else ``$HTMLRAG_CHAT_CONFIG``, else the user config
    directory's ``config.toml``; with where that choice came from."""
    if option is not None:
        return option, Origin("option", "--config")
    configured = os.environ.get(CONFIG_ENV)
    if configured:
        return Path(configured), Origin("environment", CONFIG_ENV)
    return default_config_path(), DEFAULT


def resolve(config: Path | None = None, options: Mapping[str, object] = {}) -> Resolved:
    """All settings: defaults, the file (``config`` or ``config_origin``'s), the environment
    and ``options`` (by setting name, already checked by the option's kind; None: not
    given). A bad value anywhere is a one-line ``UserError`` naming its source."""
    path, file_origin = config_origin(config)
    values = {setting.key: setting.default for setting in SETTINGS}
    origins = dict.fromkeys(values, DEFAULT)
    for key, value in file_values(path, read_toml(path)).items():
        values[key], origins[key] = value, Origin("file", str(path))
    for setting in SETTINGS:
        found = _from_environment(setting)
        if found is not None:
            values[setting.key], origins[setting.key] = found
    for setting in SETTINGS:
        value = options.get(setting.name)
        if value is not None:
            values[setting.key], origins[setting.key] = value, Origin("option", setting.option)
    return Resolved(values, origins, path, file_origin)


def read_toml(path: Path) -> dict[str, Any]:
    """The file as TOML, read once and at most ``MAX_CONFIG_BYTES``; ``{}`` when the default
    file is missing."""
    data = read_settings_file(path)
    if data is None:
        if path != default_config_path():
            raise UserError(f"{shown_path(path)}: no such config file")
        return {}
    return parse_toml(path, data)


def read_settings_file(path: Path) -> bytes | None:
    """The file's bytes (None when it is not there), if it is a regular file of at most
    ``MAX_CONFIG_BYTES``: anything else is a one-line ``UserError``. The file is opened
    without waiting (a FIFO opens at once) and checked as opened, so what is read is what
    was checked."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        kind = _not_regular(path)
        if kind is not None:
            raise UserError(f"{shown_path(path)}: not a regular file ({kind})") from None
        raise UserError(
            f"{shown_path(path)}: cannot read the config file ({error.strerror})"
        ) from None
    kind = _kind(os.fstat(descriptor).st_mode)
    if kind is not None:
        os.close(descriptor)
        raise UserError(f"{shown_path(path)}: not a regular file ({kind})")
    with os.fdopen(descriptor, "rb") as file:
        try:
            data = file.read(MAX_CONFIG_BYTES + 1)
        except OSError as error:
            raise UserError(
                f"{shown_path(path)}: cannot read the config file ({error.strerror})"
            ) from None
    if len(data) > MAX_CONFIG_BYTES:
        raise UserError(
            f"{shown_path(path)}: over {MAX_CONFIG_BYTES >> 20} MiB, not a settings file"
        )
    return data


def _not_regular(path: Path) -> str | None:
    """What ``path`` is when it is there and not a regular file (a socket cannot be opened)."""
    try:
        return _kind(os.stat(path).st_mode)
    except OSError:
        return None


def _kind(mode: int) -> str | None:
    """What a file of ``mode`` is, for users; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    """``data`` as TOML; any way it is not (not UTF-8, nested too deep) is one line."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{shown_path(path)}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{shown_path(path)}: not valid TOML ({error})") from None
    except RecursionError:
        raise UserError(f"{shown_path(path)}: not a settings file (nested too deeply)") from None


def file_values(path: Path, data: Mapping[str, Any]) -> dict[str, Any]:
    """The settings the file gives, by key, each checked by its kind; unknown tables and
    names are errors (a typo must not be silently ignored)."""
    unknown = sorted(set(data) - set(SECTIONS))
    if unknown:
        raise UserError(
            f"{shown_path(path)}: unknown table [{unknown[0]}] (known: {', '.join(SECTIONS)})"
        )
    values = {}
    for section, table in data.items():
        if not isinstance(table, dict):
            raise UserError(f"{shown_path(path)}: [{section}] must be a table")
        unknown = sorted(name for name in table if f"{section}.{name}" not in BY_KEY)
        if unknown:
            raise UserError(
                f"{shown_path(path)}: unknown [{section}] settings: {', '.join(unknown)}"
            )
        for name, value in table.items():
            setting = BY_KEY[f"{section}.{name}"]
            values[setting.key] = checked(
                setting, value, f"{shown_path(path)}: [{section}] {name}", False
            )
    return values


def _from_environment(setting: Setting) -> tuple[Any, Origin] | None:
    """The value of the first of the setting's variables that is set (empty: unset, unless
    the kind takes an empty value, like ``HTMLRAG_CHAT_PROBE_PORTS=""``: no ports)."""
    for name in setting.env:
        text = os.environ.get(name)
        if text is None or (not text and not setting.kind.accepts_empty):
            continue
        return checked(setting, text, name, True), Origin("environment", name)
    return None


def checked(setting: Setting, value: object, where: str, text: bool) -> Any:
    """``value`` through the setting's kind (``text``: as typed by a user, else as typed
    by TOML), or a one-line ``UserError`` that says ``where``."""
    try:
        return setting.kind.parse(value) if text else setting.kind.check(value)  # type: ignore[arg-type]
    except ValueError as error:
        raise UserError(f"{where} {error}") from None
