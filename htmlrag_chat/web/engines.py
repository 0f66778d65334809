"""The search engines, one table: each engine's name, whether it is an API (asked over
aiohttp, ``web/apis.py``) or scraped (result pages through ``ddgs``, ``web/ddgs.py``), the
setting that holds its key, and the function that asks it.

A new engine is one entry here and its function in its own module: the ``search.backends``
setting accepts its name (``allow``), its key is a setting of the ``[search]`` section
(``declare``: an option nowhere, a variable and a file key like every secret), and
``web/search.py`` asks it in its place in the fallback order. ``tests/web/test_engines.py``
checks that every name has a function and a line in docs/search.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from htmlrag_chat.settings.kinds import Secret
from htmlrag_chat.settings.tree import Setting, allow, declare
from htmlrag_chat.web.apis import Api, brave_api, searxng, tavily

SCRAPED = "scraped"
API = "api"


@dataclass(frozen=True)
class Engine:
    """One search engine. ``ask`` is the API's function; a scraped engine has none of its
    own: consecutive scraped engines go to ``ddgs`` as one step (``web/ddgs.py``), which
    knows them by ``name``. ``key`` is the setting of its key, when it needs one."""

    name: str
    kind: str
    ask: Api | None = None
    key: Setting | None = None
    endpoint: str = ""  # where the API lives (tests point it at a loopback server)


def _key(name: str, what: str, variable: str, example: str) -> Setting:
    return Setting(
        "search", name, Secret(), None, f"{what} key (file or environment only)",
        env_aliases=(variable,), secret=True, example=example,
    )  # fmt: skip


ENGINES: tuple[Engine, ...] = (
    Engine("searxng", API, searxng),
    Engine(
        "brave-api", API, brave_api,
        _key("brave_api_key", "Brave Search API", "BRAVE_API_KEY", "BSA..."),
        "https://api.search.brave.com/res/v1/web/search",
    ),
    Engine(
        "tavily", API, tavily,
        _key("tavily_api_key", "Tavily API", "TAVILY_API_KEY", "tvly-..."),
        "https://api.tavily.com/search",
    ),
    # The text engines of ddgs 9.16 (bing, google and yandex, which earlier releases had, are
    # gone from it: ddgs skips a name it lacks with a log line, so here they would search
    # nothing).
    *(
        Engine(name, SCRAPED)
        for name in (
            "duckduckgo", "brave", "mojeek", "startpage", "yahoo", "wikipedia", "grokipedia",
        )
    ),
)  # fmt: skip

BY_NAME = {engine.name: engine for engine in ENGINES}
ENDPOINTS = {engine.name: engine.endpoint for engine in ENGINES if engine.endpoint}

allow("search.backends", tuple(BY_NAME))
declare(*(engine.key for engine in ENGINES if engine.key is not None))


def scraped(name: str) -> bool:
    """Whether ``name`` is an engine ``ddgs`` scrapes (asked together with its neighbours)."""
    return BY_NAME[name].kind == SCRAPED
