from __future__ import annotations

import asyncio

import pytest
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from htmlrag_chat.web.ddgs import DETAIL_CHARS, _first_line, _result, classify
from htmlrag_chat.web.results import SearchResult
from htmlrag_chat.web.search import (
    SearchError,
    WebSearcher,
    deduplicate,
    kept,
    normalize_url,
    steps,
)
from htmlrag_chat.web.settings import SearchSettings
from tests.loopback import unused_port


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DDGSException("DNSError: error resolving DNS > no records found"), "offline"),
        (DDGSException("ConnectError: Connection refused (os error 111)"), "offline"),
        (DDGSException("No results found."), "rate_limited"),
        (RatelimitException("202 Ratelimit"), "rate_limited"),
        (TimeoutException("request timed out"), "timeout"),
        (DDGSException("something else"), "failed"),
    ],
)
def test_failures_are_classified(error, kind):
    assert classify(error) == kind


@pytest.mark.parametrize(
    ("detail", "said"),
    [
        (
            "duckduckgo,brave,mojeek: DNSError: DNSError('error sending request for url "
            "(https://search.brave.com/search?q=x) > error resolving DNS > DNS error: no …",
            "their names do not resolve: no network?",
        ),
        (
            "searxng cannot be reached ([Errno 111] Connection refused)",
            "the connection was refused",
        ),
        ("brave: ConnectError: Network is unreachable (os error 101)", "network is unreachable"),
    ],
)
def test_unreachable_engines_are_said_in_words_and_their_dump_kept_apart(detail, said):
    failure = SearchError("q", "offline", detail)
    assert said in str(failure) and detail not in str(failure) and failure.raw == detail
    assert "Error" not in str(failure) and "check the connection" in str(failure)
    limited = SearchError("q", "rate_limited", "searxng answered HTTP 429")
    assert "(searxng answered HTTP 429)" in str(limited) and limited.raw == ""


def test_urls_are_normalized_for_duplicates():
    same = [
        "https://www.example.com/a/?utm_source=x&b=2&a=1#top",
        "http://example.com/a?a=1&b=2",
        "https://EXAMPLE.com:443/a/?a=1&b=2&fbclid=9",
    ]
    assert len({normalize_url(url) for url in same}) == 1
    assert normalize_url("https://example.com/a?b=3") != normalize_url(same[0])
    results = [SearchResult(url, str(i)) for i, url in enumerate([*same, "https://other.org/"])]
    assert [r.title for r in deduplicate(results)] == ["0", "3"]


def test_offline_search_retries_with_backoff_then_says_what_to_do():
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    settings = SearchSettings(proxy=f"http://127.0.0.1:{unused_port()}", timeout=5, retries=2)
    searcher = WebSearcher(settings, sleep=record)
    with pytest.raises(SearchError) as failure:
        asyncio.run(searcher.search("htmlrag"))
    assert failure.value.kind == "offline"
    assert waits == [1.0, 2.0]
    message = str(failure.value)
    assert "cannot be reached" in message and "--replay" in message and "\n" not in message
    assert failure.value.exit_code == 5


def test_search_runs_off_the_event_loop():
    """The loop keeps ticking while ddgs waits on a proxy that answers slowly."""

    async def scenario() -> int:
        async def stall(reader, writer):
            await asyncio.sleep(0.6)
            writer.close()

        server = await asyncio.start_server(stall, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        settings = SearchSettings(proxy=f"http://127.0.0.1:{port}", retries=0, timeout=5)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.02)
                ticks += 1

        task = asyncio.create_task(ticker())
        with pytest.raises(SearchError):
            await WebSearcher(settings).search("htmlrag")
        task.cancel()
        server.close()
        return ticks

    assert asyncio.run(scenario()) >= 10


def test_a_result_from_the_engines_is_made_safe_before_it_is_kept():
    """ddgs hands back what the result page said: its URL, title and snippet are web text."""
    item = {
        "href": "https://evil.example/\u202egpj.exe?q=<|eot_id|>",
        "title": "Grüße \x1b[2J\u009b \u202eevil <|im_start|>\n 東京",
        "body": "snippet\x7f \u2066x\u2069",
    }
    assert _result(item) == SearchResult(
        "https://evil.example/%E2%80%AEgpj.exe?q=%3C%7Ceot_id%7C%3E",
        "Grüße [2J evil < |im_start| > 東京",
        "snippet x",
    )


def test_api_backends_are_steps_of_their_own_and_ddgs_engines_in_a_row_one_step():
    backends = ("searxng", "duckduckgo", "brave", "tavily", "mojeek")
    assert steps(backends) == [("searxng",), ("duckduckgo", "brave"), ("tavily",), ("mojeek",)]


def test_a_long_engine_message_is_shortened_between_words():
    """ddgs names every engine's URL; what is kept of it ends on a whole word."""
    text = (
        "DNSError: DNSError('error sending request for url (https://www.mojeek.com/search?q="
        "Who+designed+the+Eiffel+tower%3F) > error resolving DNS > DNS error: no records found "
        'for Query { name: Name("www.mojeek.com."), query_type: AAAA, query_class: IN }\')'
    )
    detail = _first_line(DDGSException(text + "\nsecond line"))
    assert detail.endswith(" …") and len(detail) <= DETAIL_CHARS
    kept = detail.removesuffix(" …").split()
    assert kept == text.split()[: len(kept)]  # every word whole, in order
    assert _first_line(DDGSException("short")) == "short"


def test_every_backend_s_results_are_kept_whole():
    """``kept`` is the one place live, cached and recorded results pass: a lone surrogate
    from any backend (the ddgs engines parse JSON too) becomes U+FFFD there."""
    found = [SearchResult("https://example.org/\ud83d", "Otters \ud83d", "Kelp \ude00 😀")]
    (result,) = kept(found, SearchSettings())
    assert result == SearchResult("https://example.org/\ufffd", "Otters \ufffd", "Kelp \ufffd 😀")
