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
from functools import lru_cache
from urllib.parse import urlsplit

import idna

from htmlrag_chat.base.paths import expand_user, unexpandable

MAX_TEXT = 2048  # characters: longer is a pasted file, not a name, URL or key
# A host name as ``host_name`` spells it: ASCII labels between dots (``_`` too, which DNS
# allows outside host names proper and some sites use).
HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")


class Kind:
    """How one kind of value is read, checked and written back."""

    metavar: str = "TEXT"
    accepts_empty = False  # whether an empty environment variable is a value, not "unset"
    repeatable = False  # an option given several times adds to the list (``--site a --site b``)
    switch = False  # an option and its ``--no-`` form, taking no value (``--web``/``--no-web``)

    @property
    def choices(self) -> Sequence[str] | None:
        """The only values it takes, when it is a choice of words."""
        return None

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


def _expandable(text: str) -> str:
    """``text``, unless it starts with a ``~`` that stands for no home here."""
    problem = unexpandable(text)
    if problem is not None:
        raise ValueError(problem)
    return text


def _text(value: object, what: str = "a string") -> str:
    if not isinstance(value, str):
        raise ValueError(f"must be {what}")
    if not value.strip():
        raise ValueError("must not be empty")
    if len(value) > MAX_TEXT:
        raise ValueError(f"is over {MAX_TEXT} characters")
    if any("\ud800" <= char <= "\udfff" for char in value):  # bytes Python could not decode
        raise ValueError("is not UTF-8 text")
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
class IdOrPath(Text):
    """A model or tokenizer: a hub id, a server's name, or a path, whose ``~`` or ``~user``
    must stand for a home here (it is expanded where the path is used)."""

    metavar: str = "ID_OR_PATH"

    def check(self, value: object) -> object:
        return _expandable(_text(value))


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
    def choices(self) -> Sequence[str]:
        return self.options

    def check(self, value: object) -> object:
        if value not in self.options:
            raise ValueError(f"must be one of {', '.join(self.options)}, not {_shown(value)}")
        return value


@dataclass(frozen=True)
class Integer(Kind):
    """A whole number from ``least`` to ``most``, the bounds every face checks (the command
    line, the config file, the MCP tools' schemas). Every number has an upper bound, declared
    with it: a timeout of 10**30 seconds overflows the event loop's clock, a budget or a
    count past any real one makes the work it sizes unbounded."""

    most: int
    least: int = 1
    metavar: str = "N"

    def parse(self, text: str) -> object:
        try:
            number = int(text.strip())
        except ValueError:  # not a number, or more digits than Python converts
            raise ValueError(f"must be a whole number, not {_shown(text)}") from None
        return self.check(number)

    def check(self, value: object) -> object:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be a whole number, not {_shown(value)}")
        if value < self.least:
            raise ValueError(f"must be {self.least} or more, not {_shown(value)}")
        if value > self.most:
            raise ValueError(f"must be {self.most} or less, not {_shown(value)}")
        return value


@dataclass(frozen=True)
class Seconds(Kind):
    """A positive number of seconds, at most ``most`` (a wait of 1e308 s never ends)."""

    most: float
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
        if not 0 < value <= self.most:  # NaN too
            raise ValueError(
                f"must be a number of seconds above 0 and at most {self.most:g}, not "
                f"{_shown(value)}"
            )
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
        paths = (_expandable(_text(item, "a list of paths")) for item in value)
        return tuple(str(expand_user(path)) for path in paths)


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
    """A site as users write it reduced to its host name (``www.`` dropped), in the form
    ``host_name`` gives, so it compares with the hosts of URLs."""
    host = text.strip().lower().removeprefix("http://").removeprefix("https://")
    host = host.split("/", 1)[0].rstrip(".")
    if not host or any(c.isspace() for c in host) or ":" in host:
        raise ValueError(f"is not a domain: {_shown(text)}")
    try:
        name = host_name(host)
    except UnicodeError:
        name = ""
    if not HOST_NAME.fullmatch(name):
        raise ValueError(f"is not a domain: {_shown(text)}")
    return name.removeprefix("www.")


@lru_cache(maxsize=4096)
def host_name(host: str) -> str:
    """A host as DNS compares it: lower case, no trailing dot, an internationalised name in
    its ASCII form (``bücher.de`` is ``xn--bcher-kva.de``), encoded as aiohttp's yarl
    encodes the host it connects to (IDNA 2008 with the UTS 46 mapping, else IDNA 2003), so
    that a site matches the host a download goes to however either is spelled.
    ``UnicodeError`` for a name with no ASCII form, which no download can reach either."""
    host = host.rstrip(".").lower()
    if host.isascii():
        return host
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except UnicodeError:
        return host.encode("idna").decode("ascii")


def _shown(value: object) -> str:
    """A value quoted for an error line, short and on one line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
