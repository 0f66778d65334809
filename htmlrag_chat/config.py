"""Reader settings: built-in defaults, then the TOML file, then the environment, then options.

The file is ``--config``, else ``$HTMLRAG_CHAT_CONFIG``, else ``config.toml`` in the user
config directory, with a ``[reader]`` table. Only the last may be missing: a file named on
purpose that is not there is an error, not silently the defaults. The API key is read from
the file or the environment only, never from an option, so it does not end up in shell
history or process listings.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import platformdirs

from htmlrag_chat.errors import UserError

READERS = ("local", "openai", "extractive", "auto")
_ENV_KEYS = ("HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY")


@dataclass(frozen=True)
class ReaderSettings:
    reader: str = "local"
    model: str | None = None  # None: the backend's default
    base_url: str | None = None  # an OpenAI-compatible server, e.g. http://localhost:11434/v1
    api_key: str | None = None
    max_tokens: int = 512  # the longest answer
    context_tokens: int | None = None  # the server's context window, when it is not known
    device: str = "auto"


def config_path() -> Path:
    configured = os.environ.get("HTMLRAG_CHAT_CONFIG")
    if configured:
        return Path(configured)
    return _default_path()


def _default_path() -> Path:
    return platformdirs.user_config_path("htmlrag-chat") / "config.toml"


def load_reader_settings(path: Path | None = None, **overrides: object) -> ReaderSettings:
    """Settings from ``path`` (default ``config_path()``), the environment and ``overrides``
    (options left as None do not override)."""
    path = path or config_path()
    settings = replace(ReaderSettings(), **_read_table(path, required=path != _default_path()))
    environment = {
        "base_url": os.environ.get("HTMLRAG_CHAT_BASE_URL") or None,  # empty: unset
        "api_key": next((os.environ[k] for k in _ENV_KEYS if os.environ.get(k)), None),
    }
    for values in (environment, overrides):
        settings = replace(settings, **{k: v for k, v in values.items() if v is not None})
    if settings.reader not in READERS:
        raise UserError(f"reader must be one of {', '.join(READERS)}, not {settings.reader!r}")
    return settings


def _read_table(path: Path, required: bool) -> dict[str, object]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if required:
            raise UserError(f"{path}: no such config file") from None
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
        expected = int if key in ("max_tokens", "context_tokens") else str
        if not isinstance(value, expected) or isinstance(value, bool):
            kind = "a whole number" if expected is int else "a string"
            raise UserError(f"{path}: [reader] {key} must be {kind}")
    if table.get("reader", READERS[0]) not in READERS:
        raise UserError(
            f"{path}: [reader] reader must be one of {', '.join(READERS)}, not {table['reader']!r}"
        )
    return table
