"""The API backends against a loopback server speaking their documented JSON."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest

from htmlrag_chat.base.events import Event, Notice
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.search import SearchError, WebSearcher
from htmlrag_chat.web.settings import SearchSettings
from tests.loopback import serve_app
from tests.search_apis import BRAVE_PATH, KEY, SearchApis

RESULTS = [
    ("https://example.org/a", "A \x1b[31mtitle", "about a"),
    ("https://docs.example.org/b", "B", "about b"),
    ("https://other.net/c", "C", "about c"),
]


def search(apis: SearchApis, settings: SearchSettings, query: str = "htmlrag"):
    """``query`` through a searcher whose backends live on the loopback server; the
    results, or the SearchError, and the notices it emitted."""
    events: list[Event] = []

    async def scenario():
        async with serve_app(apis.app()) as port:
            base = f"http://127.0.0.1:{port}"
            searcher = WebSearcher(
                replace(settings, searxng_url=base),
                events.append,
                endpoints={"brave-api": base + BRAVE_PATH, "tavily": base + "/search"},
            )
            try:
                return await searcher.search(query)
            except SearchError as error:
                return error

    outcome = asyncio.run(scenario())
    return outcome, [event.message for event in events if isinstance(event, Notice)]


def keyed(**changes: object) -> SearchSettings:
    return SearchSettings(brave_api_key=KEY, tavily_api_key=KEY, **changes)


def test_searxng_gets_its_json_api_parameters_and_its_results_are_made_safe():
    apis = SearchApis(RESULTS)
    settings = keyed(backends=("searxng",), time="week", region="de-de", safesearch="off")
    results, notices = search(apis, settings)
    (sent,) = apis.sent("searxng")
    assert sent.params == {
        "q": "htmlrag",
        "format": "json",
        "categories": "general",
        "pageno": "1",
        "safesearch": "0",
        "time_range": "week",
        "language": "de-DE",
    }
    assert results[0] == SearchResult("https://example.org/a", "A [31mtitle", "about a")
    assert [r.url for r in results] == [url for url, _, _ in RESULTS] and notices == []


def test_sites_go_to_each_api_its_own_way_and_other_sites_are_dropped():
    apis = SearchApis(RESULTS)
    sites = {"site": ("example.org",), "exclude_site": ("docs.example.org",)}
    for backend in ("searxng", "brave-api", "tavily"):
        results, _ = search(apis, keyed(backends=(backend,), **sites))
        assert [r.url for r in results] == ["https://example.org/a"], backend
    searxng, brave, tavily = apis.requests
    assert (
        searxng.params["q"]
        == brave.params["q"]
        == "htmlrag site:example.org -site:docs.example.org"
    )
    assert tavily.body == {
        "query": "htmlrag",
        "max_results": 8,
        "include_domains": ["example.org"],
        "exclude_domains": ["docs.example.org"],
    }


def test_brave_and_tavily_send_their_keys_in_headers_and_their_time_parameters():
    apis = SearchApis(RESULTS)
    brave, _ = search(apis, keyed(backends=("brave-api",), time="day", region="uk-en"))
    tavily, _ = search(apis, keyed(backends=("tavily",), time="year"))
    assert (
        [r.snippet for r in brave]
        == [r.snippet for r in tavily]
        == ["about a", "about b", "about c"]
    )
    (to_brave,) = apis.sent("brave-api")
    assert to_brave.headers["X-Subscription-Token"] == KEY and KEY not in str(to_brave.params)
    assert to_brave.params["freshness"] == "pd" and to_brave.params["country"] == "GB"
    (to_tavily,) = apis.sent("tavily")
    assert to_tavily.headers["Authorization"] == f"Bearer {KEY}"
    assert to_tavily.body["time_range"] == "year" and "api_key" not in to_tavily.body


def test_a_rate_limited_backend_hands_over_to_the_next_with_one_line():
    apis = SearchApis(RESULTS, status={"searxng": 429})
    results, notices = search(apis, keyed(backends=("searxng", "brave-api", "tavily")))
    assert [r.url for r in results] == [url for url, _, _ in RESULTS]
    assert notices == ["search: searxng answered HTTP 429 (rate limited); trying brave-api"]
    assert [seen.api for seen in apis.requests] == ["searxng", "brave-api"]


def test_when_every_backend_fails_the_error_says_why_each_did_and_never_shows_a_key():
    apis = SearchApis(RESULTS, status={"searxng": 500, "brave-api": 429, "tavily": 429})
    settings = keyed(backends=("searxng", "brave-api", "tavily"))
    error, notices = search(apis, settings)
    assert isinstance(error, SearchError) and error.kind == "rate_limited"
    message = str(error)
    assert "searxng answered HTTP 500" in message and "tavily answered HTTP 429" in message
    assert len(notices) == 2 and "\n" not in message and error.exit_code == 5
    assert KEY not in message + repr(settings) + "".join(notices)


def test_a_wrong_key_and_a_missing_one_are_failures_that_name_the_variable_not_the_key():
    apis = SearchApis(RESULTS)
    wrong = replace(keyed(backends=("brave-api", "tavily")), brave_api_key="wrong-key-42")
    error, notices = search(apis, replace(wrong, tavily_api_key=None))
    assert isinstance(error, SearchError)
    assert "brave-api answered HTTP 401" in str(error) and "TAVILY_API_KEY is not set" in str(error)
    assert "wrong-key-42" not in str(error) + "".join(notices)


def searxng_failure(status: int, body: str) -> str:
    """The SearchError of a search whose only backend, a loopback SearXNG, answers every
    request with ``status`` and ``body``."""
    from aiohttp import web

    async def answer(request: web.Request) -> web.Response:
        return web.Response(status=status, text=body, content_type="application/json")

    return failure_of(answer)


def failure_of(answer: Callable[..., Awaitable[Any]]) -> str:
    """The SearchError of a search whose only backend is a loopback SearXNG answering every
    request with the handler ``answer``."""
    from aiohttp import web

    async def scenario():
        app = web.Application()
        app.router.add_get("/search", answer)
        async with serve_app(app) as port:
            settings = SearchSettings(backends=("searxng",), searxng_url=f"http://127.0.0.1:{port}")
            with pytest.raises(SearchError) as failure:
                await WebSearcher(settings).search("q")
            return str(failure.value)

    return asyncio.run(scenario())


def test_a_searxng_without_the_json_format_gets_advice():
    assert "enable the json format" in searxng_failure(403, "403 Forbidden")


def test_no_searxng_url_says_how_to_give_one():
    with pytest.raises(SearchError) as failure:
        asyncio.run(WebSearcher(SearchSettings(backends=("searxng",))).search("q"))
    assert "--searxng-url" in str(failure.value) and "HTMLRAG_CHAT_SEARXNG_URL" in str(
        failure.value
    )


def test_the_proxy_carries_the_api_requests():
    """With ``proxy`` set, the request for an unresolvable host goes to the proxy (the
    loopback server, which answers it as the host would): no name is looked up here."""
    apis = SearchApis(RESULTS[:1])

    async def scenario():
        async with serve_app(apis.app()) as port:
            settings = SearchSettings(
                backends=("searxng",), searxng_url="http://searx.invalid:8888",
                proxy=f"http://127.0.0.1:{port}",
            )  # fmt: skip
            return await WebSearcher(settings).search("q")

    assert [r.url for r in asyncio.run(scenario())] == ["https://example.org/a"]
    (sent,) = apis.sent("searxng")
    assert sent.headers["Host"] == "searx.invalid:8888"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<html>an error page</html>", "searxng: "),  # not JSON
        ('{"results": "none"}', "searxng found no results"),
        ('{"results": [{"title": "no url"}, 7]}', "searxng found no results"),
    ],
)
def test_an_answer_that_is_not_the_documented_json_is_a_failure_not_a_crash(body, expected):
    assert expected in searxng_failure(200, body)


def test_json_nested_deeper_than_the_recursion_limit_is_a_failure_not_a_crash():
    message = searxng_failure(200, "[" * 100_000 + "]" * 100_000)
    assert "searxng answered JSON nested too deeply" in message and "\n" not in message


def endless_gzip(content_type: str = "application/json"):
    """A handler streaming a gzip bomb: compressed zeros, about a megabyte of them per
    kilobyte sent, for as long as the client reads; it counts the bytes it sent."""
    import zlib

    from aiohttp import web

    sent = {"compressed": 0}

    async def answer(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": content_type, "Content-Encoding": "gzip"}
        )
        await response.prepare(request)
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip format
        await response.write(packer.compress(b'{"results": ['))
        zeros = b"0" * 2**20
        while True:  # stops when the client goes (the handler is cancelled)
            chunk = packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH)
            sent["compressed"] += len(chunk)
            await response.write(chunk)
            await asyncio.sleep(0)  # the client shares this loop

    return answer, sent


def test_a_search_answer_is_capped_while_it_is_read_decompressed_bytes_included():
    """An answer that decompresses without end stops at the cap with one line saying so,
    after reading little more than the cap's compressed worth."""
    from htmlrag_chat.web.apis import MAX_ANSWER_BYTES

    answer, sent = endless_gzip()
    message = failure_of(answer)
    limit = f"{MAX_ANSWER_BYTES // 2**20} MiB"
    assert f"searxng answered more than {limit}" in message and "\n" not in message
    assert sent["compressed"] < MAX_ANSWER_BYTES // 100  # the bomb was not read on


def test_max_results_is_applied_where_live_results_come_in():
    many = [(f"https://example.org/{n}", str(n), "") for n in range(30)]
    for backend in ("searxng", "brave-api", "tavily"):
        results, _ = search(SearchApis(many), keyed(backends=(backend,), max_results=5))
        assert [r.url for r in results] == [url for url, _, _ in many[:5]], backend


JUNK = [
    "javascript:alert(1)",
    "JavaScript://example.org/%0aalert(1)",
    "file:///etc/passwd",
    "data:text/html,<script>alert(1)</script>",
    "ftp://example.org/file",
    "//example.org/scheme-relative",
    "/relative/path",
    "not a url at all",
    "http://",
    "https://[::1",
    "https://example.org:99999/",
    "https://exa mple.org/",
    "https://exa<mple.org/",
    "",
]


def test_a_backend_result_that_is_no_web_address_is_never_listed():
    good = [("https://example.org/a", "A", ""), ("http://[2001:db8::1]/b", "B", "")]
    junk = [(url, "junk", "") for url in JUNK]
    for backend in ("searxng", "brave-api", "tavily"):
        results, _ = search(SearchApis(junk + good), keyed(backends=(backend,)))
        assert [r.url for r in results] == [url for url, _, _ in good], backend
    error, _ = search(SearchApis(junk), keyed(backends=("searxng",)))
    assert isinstance(error, SearchError) and "searxng found no results" in str(error)


def through_proxy(settings: SearchSettings, proxy: str, host: str = "searx.invalid:8888"):
    """``settings`` searched through ``proxy`` (``{socks}`` in it: the port of a loopback
    SOCKS5 proxy that connects every destination to the APIs' loopback server), the backends
    named by a host no lookup here could find; the results or the SearchError, and what the
    proxy was asked for."""
    from tests.socks import socks5_proxy

    apis = SearchApis(RESULTS)

    async def scenario():
        async with serve_app(apis.app()) as port, socks5_proxy(port) as (socks, seen):
            base = f"http://{host.format(port=port)}"
            searcher = WebSearcher(
                replace(settings, searxng_url=base, proxy=proxy.format(socks=socks, port=port)),
                endpoints={"brave-api": base + BRAVE_PATH, "tavily": base + "/search"},
            )
            try:
                return await searcher.search("q"), seen.asked
            except SearchError as error:
                return error, seen.asked

    return asyncio.run(scenario())


@pytest.mark.parametrize("backend", ["searxng", "brave-api", "tavily"])
def test_a_socks5h_proxy_carries_each_api_and_looks_the_name_up_itself(backend):
    results, asked = through_proxy(keyed(backends=(backend,)), "socks5h://127.0.0.1:{socks}")
    assert [r.url for r in results] == [url for url, _, _ in RESULTS]
    assert asked == [("searx.invalid", 8888)]


def test_a_socks5_proxy_is_handed_the_address_looked_up_here():
    results, asked = through_proxy(
        keyed(backends=("searxng",)), "socks5://127.0.0.1:{socks}", host="localhost:{port}"
    )
    assert [r.url for r in results] == [url for url, _, _ in RESULTS]
    assert len(asked) == 1 and asked[0][0] in ("127.0.0.1", "::1")


@pytest.mark.parametrize("scheme", ["socks5", "socks5h", "http"])
def test_a_dead_proxy_is_named_as_the_cause(scheme):
    from tests.loopback import unused_port

    dead = f"{scheme}://user:secret@127.0.0.1:{unused_port()}"
    error, asked = through_proxy(keyed(backends=("searxng", "tavily")), dead)
    assert isinstance(error, SearchError) and error.exit_code == 5 and asked == []
    message = str(error)
    shown = dead.replace("user:secret@", "")
    assert f"searxng: the proxy {shown} cannot be reached" in message, message
    assert "secret" not in message and "\n" not in message and "--proxy" in message
