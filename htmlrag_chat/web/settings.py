"""The search settings, declared once: type, default, help, option and environment variable.

Each field's ``metadata`` says how a user sets it; ``search_options`` builds the
command-line options from it and ``config.resolve_search_settings`` reads the ``[search]``
table, the environment and those options by the same declaration, so a new setting is one
field here. API keys come from the environment only (never an option: shell history and
process listings keep those) and are ``repr=False``, so no error, log or recording shows
them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from typing import Any

DDGS_ENGINES = ("duckduckgo", "brave", "mojeek", "bing", "google", "yahoo", "yandex", "wikipedia")
API_BACKENDS = ("searxng", "brave-api", "tavily")
BACKENDS = (*API_BACKENDS, *DDGS_ENGINES)
DEFAULT_BACKENDS = ("duckduckgo", "brave", "mojeek")
TIMES = ("day", "week", "month", "year")
SAFESEARCH = ("on", "moderate", "off")
NO_REGION = "wt-wt"  # ddgs's "no region"; the API backends then send none


def _setting(
    default: object,
    help: str,
    *,
    option: bool = True,
    env: tuple[str, ...] = (),
    choices: tuple[str, ...] = (),
    secret: bool = False,
    metavar: str | None = None,
) -> Any:
    """A declared setting: ``option`` makes a command-line option of it, ``env`` lists the
    variables it may come from (the first one set wins)."""
    metadata = {"help": help, "option": option, "env": env, "choices": choices, "secret": secret}
    metadata["metavar"] = metavar
    return field(default=default, metadata=metadata, repr=not secret)


@dataclass(frozen=True)
class SearchSettings:
    backends: tuple[str, ...] = _setting(
        DEFAULT_BACKENDS,
        f"search backends in fallback order, comma-separated (default "
        f"{','.join(DEFAULT_BACKENDS)}; also {', '.join(API_BACKENDS)}, bing, google, ...)",
        metavar="A,B",
    )
    searxng_url: str | None = _setting(
        None, "a SearXNG instance for --backends searxng, e.g. http://127.0.0.1:8888",
        env=("HTMLRAG_CHAT_SEARXNG_URL",), metavar="URL",
    )  # fmt: skip
    proxy: str | None = _setting(
        None, "proxy for every search backend, e.g. socks5://127.0.0.1:9050", metavar="URL"
    )
    site: tuple[str, ...] = _setting((), "search only this site (repeatable)", metavar="DOMAIN")
    exclude_site: tuple[str, ...] = _setting(
        (), "never use this site (repeatable)", metavar="DOMAIN"
    )
    time: str | None = _setting(
        None, "only results from the last day, week, month or year", choices=TIMES
    )
    region: str = _setting(NO_REGION, "e.g. de-de, us-en (default: none)", metavar="REGION")
    safesearch: str = _setting("moderate", "safe search", choices=SAFESEARCH)
    max_results: int = _setting(8, "results per search", option=False)
    timeout: int = _setting(10, "seconds per search request", option=False)
    retries: int = _setting(2, "retries of a ddgs engine after the first try", option=False)
    backoff: float = _setting(1.0, "seconds before the first retry, doubled", option=False)
    brave_api_key: str | None = _setting(
        None, "Brave Search API key", option=False, env=("BRAVE_API_KEY",), secret=True
    )
    tavily_api_key: str | None = _setting(
        None, "Tavily API key", option=False, env=("TAVILY_API_KEY",), secret=True
    )

    def cache_key(self) -> str:
        """What the cache keys a search by besides query, region and safesearch: the backends
        and the filters (with none, the backends alone, as stored before filters existed)."""
        filters = [f"site={s}" for s in self.site] + [f"-site={s}" for s in self.exclude_site]
        if self.time:
            filters.append(f"time={self.time}")
        return "|".join([",".join(self.backends), *filters])


def declared() -> tuple[Field[object], ...]:
    """The settings as declared (their metadata says how each one is set)."""
    return fields(SearchSettings)


def option_name(setting: Field[object]) -> str:
    return "--" + setting.name.replace("_", "-")


def search_options(default: object = None) -> argparse.ArgumentParser:
    """The search options, as a parent parser: ``default`` None for the parser that sees
    them first, ``argparse.SUPPRESS`` for a subcommand's copy (so it never overwrites a
    value given before the command)."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("search")
    for setting in declared():
        meta = setting.metadata
        if not meta["option"]:
            continue
        kwargs: dict[str, object] = {"default": default, "help": meta["help"]}
        if meta["metavar"]:
            kwargs["metavar"] = meta["metavar"]
        if setting.name == "backends":
            kwargs["type"] = _for_argparse(backend_list)
        elif isinstance(setting.default, tuple):
            kwargs["action"] = "append"
            kwargs["type"] = _for_argparse(domain)
        elif meta["choices"]:
            kwargs["choices"] = meta["choices"]
        group.add_argument(option_name(setting), **kwargs)  # type: ignore[arg-type]
    return parser


def _for_argparse(parse: Callable[[str], object]) -> Callable[[str], object]:
    """``parse`` with its ValueError as argparse's error, so the message reaches the user."""

    def parsed(text: str) -> object:
        try:
            return parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parsed


def search_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The search settings the options give (None: not given), by setting name."""
    given = {}
    for setting in declared():
        if setting.metadata["option"]:
            value = getattr(args, setting.name, None)
            given[setting.name] = tuple(value) if isinstance(value, list) else value
    return given


def backend_list(text: str | list[object]) -> tuple[str, ...]:
    """``a,b,c`` (or a list from the config file) as backend names, each one known."""
    names = text.split(",") if isinstance(text, str) else text
    chosen = tuple(str(name).strip() for name in names if str(name).strip())
    unknown = [name for name in chosen if name not in BACKENDS]
    if unknown or not chosen:
        raise ValueError(
            f"unknown search backend {', '.join(unknown) or '(none)'}: "
            f"choose from {', '.join(BACKENDS)}"
        )
    return chosen


def domain(text: str) -> str:
    """A site as users write it (``example.org``, ``https://www.example.org/``) reduced to
    its host name."""
    host = text.strip().lower().removeprefix("http://").removeprefix("https://")
    host = host.split("/", 1)[0].removeprefix("www.").rstrip(".")
    if not host or any(c.isspace() for c in host) or ":" in host:
        raise ValueError(f"not a domain: {text!r}")
    return host
