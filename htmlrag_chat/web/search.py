"""Web search over the backends the settings name, in their order as the fallback order.

A backend that rate-limits, fails or finds nothing hands over to the next one with one
line saying so (a ``Notice``), since a search that silently returns nothing is what users of
such tools complain about most. Consecutive ``ddgs`` engines go to ``ddgs`` as one step (it
tries them in order itself); those steps are retried with backoff, because DuckDuckGo's rate
limit looks like an empty answer that a moment later is not. An API backend says 429 plainly,
and the next backend is its remedy, so it is asked once. What finally fails says what
happened and what to do.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import groupby
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from htmlrag_chat.base.errors import EXIT_NETWORK, UserError
from htmlrag_chat.base.events import EventSink, Notice, ignore
from htmlrag_chat.base.received import whole_text
from htmlrag_chat.settings.kinds import HOST_NAME, host_name
from htmlrag_chat.web.apis import BackendFailure, session
from htmlrag_chat.web.ddgs import ddgs_search
from htmlrag_chat.web.engines import BY_NAME, ENDPOINTS, scraped
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.settings import SearchSettings
from htmlrag_chat.web.sites import allowed

# What to do, for each kind. --replay alone answers only what the cache already holds, which
# for a new user is nothing: offline, the way forward is a recording.
_REPLAY = "or replay a question asked before with --replay"
_ADVICE = {
    "offline": "check the connection; offline, answer from a recording: htmlrag-chat cache "
    "import --jsonl FILE (a checkout has demo/recording.jsonl.gz, which `make demo` replays), "
    "or --replay-db FILE for a cache file made elsewhere",
    "rate_limited": "no results: the search engines returned none, which is also how "
    f"DuckDuckGo answers when it rate-limits: wait a minute and retry, rephrase, {_REPLAY}",
    "timeout": f"the search timed out: retry, raise the timeout, {_REPLAY}",
    "failed": f"the search failed: retry later, try other --backends, {_REPLAY}",
    "empty": "no results: rephrase, or widen --site, --exclude-site or --time",
    "proxy": "the proxy cannot be used: check --proxy (or [search] proxy, "
    "HTMLRAG_CHAT_PROXY), or search without it",
}
_TRACKING_PARAMS = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid")


class SearchError(UserError):
    """A search that failed on every backend after the retries; ``kind`` says why.

    Unreachable engines are said in words (``offline_cause``): their own messages are dumps
    of an HTTP stack (``DNSError('error sending request for url (...) > error resolving
    DNS > ...')``), hundreds of characters a line. Those stay in ``raw``, for ``-v``."""

    exit_code = EXIT_NETWORK

    def __init__(self, query: str, kind: str, detail: str) -> None:
        if kind == "offline":
            said = f"the search engines cannot be reached ({offline_cause(detail)})"
            message = f"search for {query!r} failed: {said}: {_ADVICE[kind]}"
        else:
            said = detail
            message = f"search for {query!r} failed: {_ADVICE[kind]} ({detail})"
        super().__init__(message)
        self.kind = kind
        self.reason = said  # why, without the advice: for a note where the question goes on
        self.raw = detail if kind == "offline" else ""  # what the message leaves out


def offline_cause(detail: str) -> str:
    """Why the engines cannot be reached, in words, from their messages."""
    text = detail.lower()
    if "dns" in text or "resolv" in text or "name or service not known" in text:
        return "their names do not resolve: no network?"
    if "refused" in text or "errno 111" in text or "connect call failed" in text:
        return "the connection was refused: a proxy or firewall?"
    if "unreachable" in text:
        return "the network is unreachable"
    return "no connection: no network?"


def normalize_url(url: str) -> str:
    """A URL reduced to what identifies the page: for finding duplicates among results."""
    parts = urlsplit(url.strip())
    host = (parts.hostname or "").lower().removeprefix("www.")
    if parts.port and parts.port not in (80, 443):
        host = f"{host}:{parts.port}"
    query = urlencode(
        sorted(
            (key, value)
            for key, value in parse_qsl(parts.query, keep_blank_values=True)
            if not key.lower().startswith(_TRACKING_PARAMS)
        )
    )
    return urlunsplit(("https", host, parts.path.rstrip("/") or "/", query, ""))


def deduplicate(results: list[SearchResult]) -> list[SearchResult]:
    """The first result for each normalized URL, in the engines' order."""
    seen: set[str] = set()
    unique = []
    for result in results:
        key = normalize_url(result.url)
        if key not in seen:
            seen.add(key)
            unique.append(result)
    return unique


def web_address(url: str) -> bool:
    """Whether ``url`` is a web page's address: http(s), a host that is a name or an IP
    address, a port that is a number. A backend's ``javascript:``, ``file:`` or ``data:``
    URL, a relative path or junk is no result."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises on a port that is not a number from 0 to 65535
        host = host_name(parts.hostname or "")
    except (ValueError, UnicodeError):  # "https://[::1": ValueError
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return HOST_NAME.fullmatch(host) is not None
    return True


def kept(results: Sequence[SearchResult], settings: SearchSettings) -> list[SearchResult]:
    """What a search lists of the results that came in (live, cached or recorded): web
    addresses on the allowed sites, each page once, at most ``max_results``, their text
    whole (a lone surrogate from a backend, which no cache or terminal can encode, is
    U+FFFD)."""
    usable = [whole(r) for r in results if web_address(r.url) and allowed(r.url, settings)]
    return deduplicate(usable)[: settings.max_results]


def whole(result: SearchResult) -> SearchResult:
    text = (whole_text(result.url), whole_text(result.title), whole_text(result.snippet))
    return replace(result, url=text[0], title=text[1], snippet=text[2])


def steps(backends: tuple[str, ...]) -> list[tuple[str, ...]]:
    """The backends as fallback steps: each API backend alone, consecutive ddgs engines
    together."""
    unknown = [name for name in backends if name not in BY_NAME]
    if unknown:
        raise UserError(f"unknown search backend {', '.join(unknown)}: see docs/search.md")
    grouped = groupby(backends, key=scraped)
    out: list[tuple[str, ...]] = []
    for is_ddgs, names in grouped:
        out += [tuple(names)] if is_ddgs else [(name,) for name in names]
    return out


@dataclass
class WebSearcher:
    """Searches under ``settings``; ``emit`` hears each hand-over, ``endpoints`` are where
    the API backends live (tests point them at loopback servers speaking the same JSON)."""

    settings: SearchSettings = field(default_factory=SearchSettings)
    emit: EventSink = ignore
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep  # tests pass a recorder
    endpoints: Mapping[str, str] = field(default_factory=lambda: dict(ENDPOINTS))

    async def search(self, query: str) -> list[SearchResult]:
        """Results for ``query`` from the first backend that has some, as ``kept`` keeps
        them; raises SearchError when none has."""
        plan = steps(self.settings.backends)
        failures: list[tuple[str, BackendFailure]] = []
        delay = self.settings.backoff
        for attempt in range(self.settings.retries + 1):
            tried = [step for step in plan if attempt == 0 or scraped(step[0])]
            if not tried:
                break
            if attempt:
                await self.sleep(delay)
                delay *= 2
            for number, step in enumerate(tried):
                name = ",".join(step)
                try:
                    return await self._step(step, query)
                except BackendFailure as failure:
                    failures.append((name, failure))
                    if number + 1 < len(tried):
                        following = ",".join(tried[number + 1])
                        self.emit(Notice(f"search: {failure.detail}; trying {following}"))
        last = failures[-1][1]
        detail = "; ".join(dict.fromkeys(failure.detail for _, failure in failures))
        raise SearchError(query, last.kind, detail)

    async def _step(self, step: tuple[str, ...], query: str) -> list[SearchResult]:
        settings = self.settings
        ask = BY_NAME[step[0]].ask
        if ask is None:  # scraped engines, asked together
            found = await ddgs_search(step, query, settings)
        else:
            name = step[0]
            async with session(settings) as client:
                found = await ask(client, query, settings, self.endpoints.get(name, ""))
        results = kept(found, settings)
        if not results:
            raise BackendFailure("empty", f"{','.join(step)} found no results")
        return results
