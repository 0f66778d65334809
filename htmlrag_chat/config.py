"""Reader settings: built-in defaults, then the TOML file, then the environment, then options.

The file is ``--config``, else ``$HTMLRAG_CHAT_CONFIG``, else ``config.toml`` in the user
config directory, with a ``[reader]`` table, a ``[search]`` one (``web/settings.py``) and a
``[web]`` one for the question deadline.
Only the last may be missing: a file named on purpose that is not there is an error, not
silently the defaults. The API key is read from the file or the environment only, never from
an option, so it does not end up in shell history or process listings. Each value's origin
is kept alongside (``resolve_reader_settings``), so ``htmlrag-chat config`` can say why a
setting has the value it has.

``probe_ports`` are the loopback ports ``--reader auto`` asks for a local server
(``reader/discover.py``); ``HTMLRAG_CHAT_PROBE_PORTS=""`` turns the probe off.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import Field, dataclass, fields, replace
from pathlib import Path

import platformdirs

from htmlrag_chat.errors import UserError
from htmlrag_chat.ports import DEFAULT_PORTS
from htmlrag_chat.web.settings import SearchSettings, backend_list, domain, option_name
from htmlrag_chat.web.settings import declared as search_fields

READERS = ("local", "openai", "extractive", "auto")
DEFAULT_DEADLINE = 3.0  # seconds after a question's first page arrives that it waits for more
# Settings the environment may give, each from the first of its variables that is set.
_ENVIRONMENT = {
    "base_url": ("HTMLRAG_CHAT_BASE_URL",),
    "api_key": ("HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY"),
}
_PORTS_ENV = "HTMLRAG_CHAT_PROBE_PORTS"


@dataclass(frozen=True)
class ReaderSettings:
    reader: str = "auto"  # a configured server, a found one, a model on disk, or extractive
    model: str | None = None  # None: the backend's default
    base_url: str | None = None  # an OpenAI-compatible server, e.g. http://localhost:11434/v1
    api_key: str | None = None
    max_tokens: int = 512  # the longest answer
    context_tokens: int | None = None  # the server's context window, when it is not known
    device: str = "auto"
    probe_ports: tuple[int, ...] = DEFAULT_PORTS  # 127.0.0.1 only (``--reader auto``)


@dataclass(frozen=True)
class Origin:
    """Where a setting's value came from: ``default``, ``file``, ``environment`` or
    ``option``, and ``name``: the file's path, the variable or the option (None for a
    default)."""

    source: str
    name: str | None = None


DEFAULT = Origin("default")


def config_path(option: Path | None = None) -> Path:
    return config_origin(option)[0]


def config_origin(option: Path | None = None) -> tuple[Path, Origin]:
    """The settings file: ``--config``, else ``$HTMLRAG_CHAT_CONFIG``, else the user config
    directory's ``config.toml``; with where that choice came from."""
    if option is not None:
        return option, Origin("option", "--config")
    configured = os.environ.get("HTMLRAG_CHAT_CONFIG")
    if configured:
        return Path(configured), Origin("environment", "HTMLRAG_CHAT_CONFIG")
    return _default_path(), DEFAULT


def _default_path() -> Path:
    return platformdirs.user_config_path("htmlrag-chat") / "config.toml"


def load_reader_settings(path: Path | None = None, **overrides: object) -> ReaderSettings:
    """Settings from ``path`` (default ``config_path()``), the environment and ``overrides``
    (options left as None do not override)."""
    return resolve_reader_settings(path, overrides)[0]


def resolve_reader_settings(
    path: Path | None, options: Mapping[str, object]
) -> tuple[ReaderSettings, dict[str, Origin]]:
    """The settings and, per field, the origin of its value: the file, then the environment,
    then ``options`` (by field name; None means "not given"), each overriding the one before."""
    file = config_path(path)
    given = [(key, value, Origin("file", str(file))) for key, value in _read_table(file).items()]
    for key, names in _ENVIRONMENT.items():
        name = next((name for name in names if os.environ.get(name)), None)  # empty: unset
        if name:
            given.append((key, os.environ[name], Origin("environment", name)))
    ports = _env_ports()
    if ports is not None:
        given.append(("probe_ports", ports, Origin("environment", _PORTS_ENV)))
    given += [(key, value, Origin("option", _option(key))) for key, value in options.items()]
    given = [item for item in given if item[1] is not None]
    settings = replace(ReaderSettings(), **{key: value for key, value, _ in given})
    if settings.reader not in READERS:
        raise UserError(f"reader must be one of {', '.join(READERS)}, not {settings.reader!r}")
    origins = {f.name: DEFAULT for f in fields(ReaderSettings)}
    origins.update({key: origin for key, _, origin in given})
    return settings, origins


def _env_ports() -> tuple[int, ...] | None:
    """``HTMLRAG_CHAT_PROBE_PORTS``: comma-separated ports, empty for none, unset: None."""
    text = os.environ.get(_PORTS_ENV)
    if text is None:
        return None
    try:
        ports = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        ports = (0,)  # reported below
    if not all(0 < port < 65536 for port in ports):
        raise UserError(f"{_PORTS_ENV} must be comma-separated port numbers, not {text!r}")
    return ports


def _option(field: str) -> str:
    return "--" + field.replace("_", "-")


def load_deadline(path: Path | None = None) -> float:
    """``deadline`` of the ``[web]`` table (seconds a question waits for more pages after
    the first one arrived), else ``DEFAULT_DEADLINE``."""
    return resolve_deadline(path)[0]


def resolve_deadline(path: Path | None = None) -> tuple[float, Origin]:
    """The deadline and where it came from (the file, or the default)."""
    file = config_path(path)
    table = _read_file(file).get("web", {})
    if not isinstance(table, dict) or set(table) - {"deadline"}:
        raise UserError(f"{file}: [web] takes only deadline = SECONDS")
    if "deadline" not in table:
        return DEFAULT_DEADLINE, DEFAULT
    value = table["deadline"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UserError(f"{file}: [web] deadline must be a positive number of seconds")
    return float(value), Origin("file", str(file))


def resolve_search_settings(
    path: Path | None, options: Mapping[str, object]
) -> tuple[SearchSettings, dict[str, Origin]]:
    """The search settings and each one's origin: the defaults, the ``[search]`` table, the
    environment, then ``options`` (None: not given), as ``web/settings.py`` declares them."""
    file = config_path(path)
    table = _read_file(file).get("search", {})
    if not isinstance(table, dict):
        raise UserError(f"{file}: [search] must be a table")
    declared = {setting.name: setting for setting in search_fields()}
    unknown = sorted(set(table) - set(declared))
    if unknown:
        raise UserError(f"{file}: unknown [search] settings: {', '.join(unknown)}")
    origin = Origin("file", str(file))
    given = [
        (key, _search_value(file, declared[key], value), origin) for key, value in table.items()
    ]
    for setting in declared.values():
        name = next((n for n in setting.metadata["env"] if os.environ.get(n)), None)
        if name:
            given.append((setting.name, os.environ[name], Origin("environment", name)))
    given += [
        (key, value, Origin("option", option_name(declared[key])))
        for key, value in options.items()
        if value is not None
    ]
    settings = replace(SearchSettings(), **{key: value for key, value, _ in given})
    origins = {name: DEFAULT for name in declared}
    origins.update({key: origin for key, _, origin in given})
    return settings, origins


def _search_value(file: Path, setting: Field[object], value: object) -> object:
    """A ``[search]`` value checked against its declaration."""
    where = f"{file}: [search] {setting.name}"
    choices = setting.metadata["choices"]
    try:
        if setting.name == "backends":
            return backend_list(value if isinstance(value, list) else str(value))
        if isinstance(setting.default, tuple):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("must be a list of strings")
            return tuple(domain(v) for v in value)
    except ValueError as error:
        raise UserError(f"{where}: {error}") from None
    expected = type(setting.default) if setting.default is not None else str
    accepted = (int, float) if expected is float else expected
    if isinstance(value, bool) or not isinstance(value, accepted):
        raise UserError(f"{where} must be {_KINDS.get(expected, 'a string')}")
    if choices and value not in choices:
        raise UserError(f"{where} must be one of {', '.join(choices)}, not {value!r}")
    return float(value) if expected is float else value


_KINDS = {int: "a whole number", float: "a number", str: "a string"}


def _read_file(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if path != _default_path():
            raise UserError(f"{path}: no such config file") from None
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the config file ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML ({error})") from None


def _read_table(path: Path) -> dict[str, object]:
    table = _read_file(path).get("reader", {})
    if not isinstance(table, dict):
        raise UserError(f"{path}: [reader] must be a table")
    unknown = sorted(set(table) - {f.name for f in fields(ReaderSettings)})
    if unknown:
        raise UserError(f"{path}: unknown [reader] settings: {', '.join(unknown)}")
    for key, value in table.items():
        if key == "probe_ports":
            table[key] = _ports(path, value)
            continue
        expected = int if key in ("max_tokens", "context_tokens") else str
        if not isinstance(value, expected) or isinstance(value, bool):
            kind = "a whole number" if expected is int else "a string"
            raise UserError(f"{path}: [reader] {key} must be {kind}")
    if table.get("reader", READERS[0]) not in READERS:
        raise UserError(
            f"{path}: [reader] reader must be one of {', '.join(READERS)}, not {table['reader']!r}"
        )
    return table


def _ports(path: Path, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536 for port in value
    ):
        raise UserError(f"{path}: [reader] probe_ports must be a list of port numbers")
    return tuple(value)
