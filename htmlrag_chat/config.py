"""Reader settings: built-in defaults, then the TOML file, then the environment, then options.

The file is ``$HTMLRAG_CHAT_CONFIG`` or ``config.toml`` in the user config directory, with a
``[reader]`` table. The API key is read from the file or the environment only, never from
an option, so it does not end up in shell history or process listings.

``probe_ports`` are the loopback ports ``--reader auto`` asks for a local server
(``reader/discover.py``); ``HTMLRAG_CHAT_PROBE_PORTS=""`` turns the probe off.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import platformdirs

from htmlrag_chat.errors import UserError
from htmlrag_chat.reader.discover import DEFAULT_PORTS

READERS = ("local", "openai", "extractive", "auto")
DEFAULT_DEADLINE = 3.0  # seconds after a question's first page arrives that it waits for more
_ENV_KEYS = ("HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY")
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


def config_path() -> Path:
    configured = os.environ.get("HTMLRAG_CHAT_CONFIG")
    if configured:
        return Path(configured)
    return platformdirs.user_config_path("htmlrag-chat") / "config.toml"


def load_reader_settings(path: Path | None = None, **overrides: object) -> ReaderSettings:
    """Settings from ``path`` (default ``config_path()``), the environment and ``overrides``
    (options left as None do not override)."""
    settings = replace(ReaderSettings(), **_read_table(path or config_path()))
    environment = {
        "base_url": os.environ.get("HTMLRAG_CHAT_BASE_URL") or None,  # empty: unset
        "api_key": next((os.environ[k] for k in _ENV_KEYS if os.environ.get(k)), None),
        "probe_ports": _env_ports(),
    }
    for values in (environment, overrides):
        settings = replace(settings, **{k: v for k, v in values.items() if v is not None})
    if settings.reader not in READERS:
        raise UserError(f"reader must be one of {', '.join(READERS)}, not {settings.reader!r}")
    return settings


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


def _read_table(path: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"{path}: cannot read the config file ({error})") from None
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML ({error})") from None
    table = data.get("reader", {})
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
