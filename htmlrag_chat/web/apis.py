"""Search backends with a JSON API: SearXNG, the Brave Search API and Tavily, over aiohttp.

Each one turns the settings into its own parameters (site, time and region where the API
has a way to say them) and its documented JSON into ``SearchResult``s, and says why it
failed as a ``BackendFailure`` kind: a 429 is ``rate_limited``, an unreachable host
``offline``, anything else ``failed`` with the status. The keys travel in headers, never in
a URL, and no failure text carries them.

The SearXNG instance is the user's own, so it may be on loopback or the LAN: these
requests do not go through the page fetcher's guard (which still checks every page).

An answer is data from the other side of a connection, read as pages are: at most
``MAX_ANSWER_BYTES`` of it, decompressed bytes counted while they stream (a gzip bomb stops
there), and JSON nested deeper than the parser's recursion allows is a failure of that
backend, not a ``RecursionError``.

``--proxy`` carries every request of a session: an HTTP proxy as aiohttp speaks to one, a
SOCKS5 proxy through aiohttp-socks (``socks5h``: the proxy looks the name up, as Tor needs;
``socks5``: it is looked up here). A proxy that cannot be reached or refuses is named as
the cause (``proxy``), without the credentials its URL may hold.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import aiohttp
import aiohttp_socks

from htmlrag_chat import __version__
from htmlrag_chat.base.received import TooDeep, loads
from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.settings.tree import NO_REGION
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.settings import SearchSettings

_BRAVE_FRESHNESS = {"day": "pd", "week": "pw", "month": "pm", "year": "py"}
_BRAVE_SAFESEARCH = {"on": "strict", "moderate": "moderate", "off": "off"}
_SEARXNG_SAFESEARCH = {"on": "2", "moderate": "1", "off": "0"}
# A search answer is tens of kilobytes (SearXNG's 30-odd results, Brave's 20): four
# megabytes is far past any real one, and what is over it is not read.
MAX_ANSWER_BYTES = 4 * 2**20
_CHUNK_BYTES = 64 * 1024
SOCKS_SCHEMES = ("socks5", "socks5h")
SOCKS_PORT = 1080  # the port RFC 1928 assigns, for a proxy URL that names none


class BackendFailure(Exception):
    """One backend could not answer; ``kind`` is offline, rate_limited, timeout, proxy,
    failed or empty, ``detail`` one line for the user."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


Api = Callable[[aiohttp.ClientSession, str, SearchSettings, str], Awaitable[list[SearchResult]]]


async def searxng(
    session: aiohttp.ClientSession, query: str, settings: SearchSettings, endpoint: str
) -> list[SearchResult]:
    """``GET /search?q=...&format=json`` (the instance must enable the json format, else it
    answers 403)."""
    if not settings.searxng_url:
        raise BackendFailure(
            "failed", "no SearXNG URL: pass --searxng-url, set [search] searxng_url or "
            "HTMLRAG_CHAT_SEARXNG_URL",
        )  # fmt: skip
    params = {
        "q": with_operators(query, settings),
        "format": "json",
        "categories": "general",
        "pageno": "1",
        "safesearch": _SEARXNG_SAFESEARCH[settings.safesearch],
    }
    if settings.time:
        params["time_range"] = settings.time
    language = _language(settings.region)
    if language:
        params["language"] = language
    url = settings.searxng_url.rstrip("/") + "/search"
    data = await _json(session.get(url, params=params), "searxng", settings.proxy)
    return _listed(data, ("results",), "content")


async def brave_api(
    session: aiohttp.ClientSession, query: str, settings: SearchSettings, endpoint: str
) -> list[SearchResult]:
    """The Brave Search API's web results (``web.results``), key in X-Subscription-Token."""
    key = _key(settings.brave_api_key, "BRAVE_API_KEY")
    params = {
        "q": with_operators(query, settings),
        "count": str(min(settings.max_results, 20)),
        "safesearch": _BRAVE_SAFESEARCH[settings.safesearch],
    }
    if settings.time:
        params["freshness"] = _BRAVE_FRESHNESS[settings.time]
    if settings.region != NO_REGION:
        params["country"] = _country(settings.region)
    headers = {"X-Subscription-Token": key, "Accept": "application/json"}
    request = session.get(endpoint, params=params, headers=headers)
    return _listed(
        await _json(request, "brave-api", settings.proxy), ("web", "results"), "description"
    )


async def tavily(
    session: aiohttp.ClientSession, query: str, settings: SearchSettings, endpoint: str
) -> list[SearchResult]:
    """Tavily's ``POST /search``; sites go in ``include_domains``/``exclude_domains``."""
    key = _key(settings.tavily_api_key, "TAVILY_API_KEY")
    body: dict[str, Any] = {"query": query, "max_results": min(settings.max_results, 20)}
    if settings.site:
        body["include_domains"] = list(settings.site)
    if settings.exclude_site:
        body["exclude_domains"] = list(settings.exclude_site)
    if settings.time:
        body["time_range"] = settings.time
    headers = {"Authorization": f"Bearer {key}"}
    request = session.post(endpoint, json=body, headers=headers)
    return _listed(await _json(request, "tavily", settings.proxy), ("results",), "content")


def with_operators(query: str, settings: SearchSettings) -> str:
    """The query with ``site:`` and ``-site:`` operators, for engines that read them."""
    words = [query]
    if settings.site:
        words.append(" OR ".join(f"site:{site}" for site in settings.site))
    words += [f"-site:{site}" for site in settings.exclude_site]
    return " ".join(words)


def session(settings: SearchSettings) -> aiohttp.ClientSession:
    """One session per search, through ``--proxy`` when one is set; no proxy from the
    environment (``--proxy`` says it)."""
    timeout = aiohttp.ClientTimeout(total=settings.timeout)
    headers = {"User-Agent": f"htmlrag-chat/{__version__}"}
    proxy = settings.proxy
    if proxy is None or urlsplit(proxy).scheme not in SOCKS_SCHEMES:
        return aiohttp.ClientSession(timeout=timeout, headers=headers, proxy=proxy)
    parts = urlsplit(proxy)
    connector = aiohttp_socks.ProxyConnector(
        host=parts.hostname or "",
        port=parts.port or SOCKS_PORT,
        proxy_type=aiohttp_socks.ProxyType.SOCKS5,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        rdns=parts.scheme == "socks5h",
    )
    return aiohttp.ClientSession(timeout=timeout, headers=headers, connector=connector)


def shown_proxy(proxy: str) -> str:
    """The proxy URL as a message shows it: without the user name and password."""
    parts = urlsplit(proxy)
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=host).geturl()


async def _json(request: Any, name: str, proxy: str | None) -> object:
    try:
        async with request as response:
            if response.status == 429:
                raise BackendFailure("rate_limited", f"{name} answered HTTP 429 (rate limited)")
            if response.status == 403 and name == "searxng":
                raise BackendFailure(
                    "failed", "searxng answered HTTP 403: enable the json format in the "
                    "instance's settings.yml (search: formats: [html, json])",
                )  # fmt: skip
            if response.status >= 400:
                raise BackendFailure("failed", f"{name} answered HTTP {response.status}")
            return _decoded(await _capped(response, name), name)
    except (aiohttp.ClientProxyConnectionError, aiohttp_socks.ProxyConnectionError) as error:
        reason = _reason(error)
        raise BackendFailure(
            "proxy", f"{name}: the proxy {shown_proxy(proxy or '')} cannot be reached ({reason})"
        ) from None
    except (aiohttp_socks.ProxyError, aiohttp_socks.ProxyTimeoutError) as error:
        reason = _reason(error)
        raise BackendFailure(
            "proxy", f"{name}: the proxy {shown_proxy(proxy or '')} failed ({reason})"
        ) from None
    except TimeoutError:
        raise BackendFailure("timeout", f"{name} timed out") from None
    except aiohttp.ClientConnectorError as error:
        raise BackendFailure("offline", f"{name} cannot be reached ({error.os_error})") from None
    except (aiohttp.ClientError, ValueError) as error:  # ValueError: not JSON, a bad URL
        detail = one_line(str(error))[:120] or type(error).__name__
        raise BackendFailure("failed", f"{name}: {detail}") from None


async def _capped(response: aiohttp.ClientResponse, name: str) -> bytes:
    """The (decompressed) body, read until it passes ``MAX_ANSWER_BYTES``."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise BackendFailure(
                "failed", f"{name} answered more than {MAX_ANSWER_BYTES // 2**20} MiB, the "
                "limit for a search answer",
            )  # fmt: skip
        chunks.append(chunk)
    return b"".join(chunks)


def _decoded(body: bytes, name: str) -> object:
    """The answer as JSON (UTF-8, -16 or -32, as ``json`` detects it)."""
    try:
        return loads(body)  # its text made whole: a lone surrogate in a title is U+FFFD
    except TooDeep:
        raise BackendFailure("failed", f"{name} answered JSON nested too deeply") from None
    except ValueError as error:  # UnicodeDecodeError included
        raise BackendFailure("failed", f"{name}: not JSON ({one_line(str(error))[:120]})") from None


def _reason(error: Exception) -> str:
    """An exception's text, or failing that its name, short and on one line."""
    return one_line(str(getattr(error, "os_error", None) or error))[:120] or type(error).__name__


def _key(value: str | None, variable: str) -> str:
    if not value:
        raise BackendFailure("failed", f"{variable} is not set")
    return value


def _listed(data: object, path: tuple[str, ...], snippet: str) -> list[SearchResult]:
    """The results at ``path`` in an API's JSON (a part missing or malformed: none), their
    URLs and text made safe before anything keeps them."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    items = [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []
    return [
        SearchResult(
            safe_url(_string(item.get("url"))),
            one_line(_string(item.get("title"))),
            one_line(_string(item.get(snippet))),
        )
        for item in items
    ]


def _string(value: object) -> str:
    """A field that should be a string; anything else (a number, a list, deep nesting) is
    no text."""
    return value if isinstance(value, str) else ""


def _language(region: str) -> str | None:
    """ddgs's ``us-en`` as SearXNG's ``en-US``; no region, no language."""
    if region == NO_REGION or "-" not in region:
        return None
    country, language = region.split("-", 1)
    return f"{language}-{country.upper()}"


def _country(region: str) -> str:
    country = region.split("-", 1)[0].upper()
    return "GB" if country == "UK" else country
