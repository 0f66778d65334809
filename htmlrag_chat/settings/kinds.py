"""The kinds of value a setting holds, each checked the same way whatever the source.

A value reaches a setting as text (an option, an environment variable, ``config set``) or
as a TOML value (the config file). Each kind turns either into the one Python value the
code uses, or raises ``ValueError`` with what is wrong, which the caller prefixes with
where the value came from. So ``max_tokens = -5`` in the file is refused with the words
``--max-tokens -5`` gets, and a URL that ``urllib`` cannot split never reaches a client.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_TEXT = 2048  # characters: longer is a pasted file, not a name, URL or key


class Kind:
    """How one kind of value is read, checked and written back."""

    metavar: str = "TEXT"
    choices: Sequence[str] | None = None
    accepts_empty = False  # whether an empty environment variable is a value, not "unset"
    repeatable = False  # an option given several times adds to the list (``--site a --site b``)
    switch = False  # an option and its ``--no-`` form, taking no value (``--web``/``--no-web``)

    def parse(self, text: str) -> object:
        """A value from text (an option, a variable, ``config set``)."""
        return self.check(text)

    def check(self, value: object) -> object:
        """A value from the config file (already typed by TOML), normalised."""
        raise NotImplementedError

    def toml(self, value: object) -> str:
        """``value`` as a TOML value, for ``config set`` and ``config init``."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return repr(value)
        if isinstance(value, tuple | list):
            return "[" + ", ".join(self.toml(item) for item in value) + "]"
        return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _text(value: object, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be {what}")
    if not value.strip():
        raise ValueError("must not be empty")
    if len(value) > MAX_TEXT:
        raise ValueError(f"is over {MAX_TEXT} characters")
    if any(unicodedata.category(char) in ("Cc", "Cf") for char in value):
        raise ValueError("must not hold control characters (a line break, an escape)")
    return value


@dataclass(frozen=True)
class Text(Kind):
    """One line of printable text: a model name, a path, a region."""

    metavar: str = "TEXT"

    def check(self, value: object) -> object:
        return _text(value)


@dataclass(frozen=True)
class Secret(Text):
    """Printable text never shown (an API key): a CR LF in it would split an HTTP header."""

    metavar: str = "KEY"


@dataclass(frozen=True)
class Choice(Kind):
    """One of a fixed set of words."""

    options: tuple[str, ...] = ()
    metavar: str = ""

    @property
    def choices(self) -> Sequence[str]:  # type: ignore[override]
        return self.options

    def check(self, value: object) -> object:
        if value not in self.options:
            raise ValueError(f"must be one of {', '.join(self.options)}, not {_shown(value)}")
        return value


@dataclass(frozen=True)
class Integer(Kind):
    """A whole number of at least ``least``."""

    least: int = 1
    metavar: str = "N"

    def parse(self, text: str) -> object:
        try:
            return self.check(int(text.strip()))
        except ValueError as error:
            if "invalid literal" in str(error):
                raise ValueError(f"must be a whole number, not {_shown(text)}") from None
            raise

    def check(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, not {_shown(value)}")
        if value < self.least:
            raise ValueError(f"must be {self.least} or more, not {value}")
        return value


@dataclass(frozen=True)
class Seconds(Kind):
    """A positive, finite number of seconds."""

    metavar: str = "SECONDS"

    def parse(self, text: str) -> object:
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError(f"must be a number of seconds, not {_shown(text)}") from None
        return self.check(number)

    def check(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number of seconds, not {_shown(value)}")
        if not 0 < value < float("inf"):
            raise ValueError(f"must be a positive number of seconds, not {value}")
        return float(value)


@dataclass(frozen=True)
class Url(Kind):
    """A URL of one of ``schemes`` with a host, that ``urllib`` can split (``http://[::1``
    cannot)."""

    metavar: str = "URL"
    schemes: tuple[str, ...] = ("http", "https")

    def check(self, value: object) -> object:
        text = _text(value).strip()
        try:
            parts = urlsplit(text)
            _ = parts.port  # raises on a port that is not a number from 0 to 65535
        except ValueError as error:
            raise ValueError(f"is not a URL ({error}): {_shown(text)}") from None
        if parts.scheme not in self.schemes or not parts.hostname or " " in text:
            schemes = " or ".join(f"{scheme}://" for scheme in self.schemes)
            raise ValueError(f"must be a {schemes} URL with a host, not {_shown(text)}")
        return text


_DEVICE = re.compile(r"auto|cpu|mps|cuda(?::\d{1,3})?")


@dataclass(frozen=True)
class Device(Kind):
    """``auto``, ``cpu``, ``cuda``, ``cuda:N`` or ``mps``: the name is checked when it is
    read; whether this machine has it, where a model is loaded (``device.check_device``)."""

    metavar: str = "DEVICE"

    def check(self, value: object) -> object:
        if not isinstance(value, str) or not _DEVICE.fullmatch(value):
            raise ValueError(f"must be auto, cpu, cuda, cuda:N or mps, not {_shown(value)}")
        return value


@dataclass(frozen=True)
class Ports(Kind):
    """Port numbers: a TOML list, or comma-separated text (empty: none)."""

    metavar: str = "PORT,PORT,..."
    accepts_empty = True

    def parse(self, text: str) -> object:
        try:
            return self.check([int(part) for part in text.split(",") if part.strip()])
        except ValueError:
            raise ValueError(f"must be comma-separated port numbers, not {_shown(text)}") from None

    def check(self, value: object) -> object:
        if not isinstance(value, list | tuple) or not all(
            isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536
            for port in value
        ):
            raise ValueError("must be a list of port numbers (1-65535)")
        return tuple(value)


@dataclass(frozen=True)
class Names(Kind):
    """Names in order of preference, each one of ``known`` when it is given: a TOML list,
    or comma-separated text."""

    metavar: str = "NAME,NAME,..."
    known: tuple[str, ...] = ()

    def parse(self, text: str) -> object:
        return self.check([part.strip() for part in text.split(",") if part.strip()])

    def check(self, value: object) -> object:
        if not isinstance(value, list | tuple) or not value:
            raise ValueError("must be a non-empty list of names")
        names = tuple(_text(item, "a list of names") for item in value)
        unknown = [name for name in names if self.known and name not in self.known]
        if unknown:
            raise ValueError(
                f"has unknown {', '.join(unknown)}: choose from {', '.join(self.known)}"
            )
        return names


@dataclass(frozen=True)
class Domains(Kind):
    """Sites as users write them (``example.org``, ``https://www.example.org/``), each
    reduced to its host name: a TOML list, comma-separated text, or a repeated option."""

    metavar: str = "DOMAIN"
    accepts_empty = True
    repeatable = True

    def parse(self, text: str) -> object:
        return self.check([part for part in text.split(",") if part.strip()])

    def check(self, value: object) -> object:
        if not isinstance(value, list | tuple):
            raise ValueError("must be a list of domains")
        return tuple(domain(_text(item, "a list of domains")) for item in value)


@dataclass(frozen=True)
class Paths(Kind):
    """Files or folders, as given (``~`` expanded; whether they are there is checked where
    they are read): a TOML list, a repeated option, or text with ``os.pathsep`` between
    paths (``a:b``, as in ``PATH``)."""

    metavar: str = "PATH"
    accepts_empty = True
    repeatable = True

    def parse(self, text: str) -> object:
        return self.check([part for part in text.split(os.pathsep) if part.strip()])

    def check(self, value: object) -> object:
        if not isinstance(value, list | tuple):
            raise ValueError("must be a list of paths")
        return tuple(os.path.expanduser(_text(item, "a list of paths")) for item in value)


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Switch(Kind):
    """On or off: ``--name``/``--no-name`` on the command line, ``true``/``false`` in the
    file, ``1``/``0`` (or yes/no, on/off) in the environment."""

    metavar: str = ""
    switch = True

    def parse(self, text: str) -> object:
        word = text.strip().lower()
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise ValueError(f"must be true or false (1 or 0), not {_shown(text)}")

    def check(self, value: object) -> object:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {_shown(value)}")
        return value


def domain(text: str) -> str:
    """A site as users write it reduced to its host name (``www.`` dropped)."""
    host = text.strip().lower().removeprefix("http://").removeprefix("https://")
    host = host.split("/", 1)[0].removeprefix("www.").rstrip(".")
    if not host or any(c.isspace() for c in host) or ":" in host:
        raise ValueError(f"is not a domain: {_shown(text)}")
    return host


def _shown(value: object) -> str:
    """A value quoted for an error line, short and on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
