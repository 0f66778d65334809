"""Record and replay through the real store and a loopback web server."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import struct
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from htmlrag_chat.sources.recorder import (
    FAILURE_MAX_AGE,
    KEPT_STORED_PAGE,
    NOT_RECORDED,
    MissingFromRecording,
    WebRecorder,
)
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.results import Outcome, SearchResult
from htmlrag_chat.web.search import WebSearcher
from htmlrag_chat.web.settings import SearchSettings
from tests.loopback import serve_app
from tests.search_apis import SearchApis

ARTICLE = (
    "<html><head><title>Docker</title></head><body><article>"
    + "<p>Docker is licensed under the Apache License, Version 2.0.</p>" * 10
    + "</article></body></html>"
)


@asynccontextmanager
async def site(hits: Counter, failing: dict[str, str] | None = None):
    """A loopback site serving ARTICLE at every path; ``failing`` maps a path to how it
    fails instead while the entry is there ("503", "404", "410", "reset", "slow")."""
    failing = {} if failing is None else failing

    async def page(request: web.Request) -> web.StreamResponse:
        hits[request.path] += 1
        how = failing.get(request.path)
        if how == "reset":
            sock = request.transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            request.transport.abort()  # with linger 0: a TCP reset
            await asyncio.sleep(1)
        if how == "slow":
            await asyncio.sleep(2)
        if how is not None and how.isdigit():
            return web.Response(status=int(how), text="not now")
        return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")

    async with serve(page) as base:
        yield base


@asynccontextmanager
async def serve(page: Callable[[web.Request], Awaitable[web.StreamResponse]]):
    """``page`` answering every path of a server on a free loopback port; yields its URL."""
    app = web.Application()
    app.router.add_get("/{name}", page)
    async with serve_app(app, shutdown_timeout=0.1) as port:
        yield f"http://127.0.0.1:{port}"


LOOPBACK = FetchPolicy(allow_private=True, total_timeout=0.5)


def test_live_pages_are_recorded_and_then_served_from_the_cache(tmp_path):
    hits: Counter = Counter()

    async def scenario():
        async with site(hits) as base:
            urls = [f"{base}/a", f"{base}/b"]
            with Store.open(tmp_path / "c.sqlite3") as store:
                recorder = WebRecorder(store, fetcher=Fetcher(LOOPBACK))
                first = await recorder.fetch_many(urls)
                again = await recorder.fetch_many(urls)
            return first, again

    first, again = asyncio.run(scenario())
    assert [r.outcome for r in first] == [Outcome.OK, Outcome.OK]
    assert not any(r.from_cache for r in first) and all(r.from_cache for r in again)
    assert [r.body for r in again] == [r.body for r in first]
    assert hits == Counter({"/a": 1, "/b": 1})


def test_overlapping_batches_share_one_fetcher_that_closes_after_the_last(tmp_path):
    """A question's downloads may start while the last one's late pages still arrive: both
    go through the one fetcher handed in, which closes its session when both are done."""
    hits: Counter = Counter()

    async def scenario():
        async with site(hits, {"/slow": "slow"}) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                fetcher = Fetcher(FetchPolicy(allow_private=True))
                recorder = WebRecorder(store, fetcher=fetcher)
                late = asyncio.create_task(recorder.fetch_many([f"{base}/slow"]))
                await asyncio.sleep(0.2)
                (quick,) = await recorder.fetch_many([f"{base}/quick"])
                open_meanwhile = fetcher._session is not None
                (slow,) = await late
                return quick, slow, open_meanwhile, fetcher._session

    quick, slow, open_meanwhile, session = asyncio.run(scenario())
    assert quick.outcome is Outcome.OK and slow.outcome is Outcome.OK
    assert open_meanwhile and session is None


def test_refresh_refetches_pages_older_than_the_age(tmp_path):
    hits: Counter = Counter()

    async def scenario():
        async with site(hits) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                await WebRecorder(store, fetcher=Fetcher(LOOPBACK)).fetch_many([f"{base}/a"])
                await asyncio.sleep(0.05)
                fresh = WebRecorder(store, max_age=0.01, fetcher=Fetcher(LOOPBACK))
                return await fresh.fetch_many([f"{base}/a"])

    (result,) = asyncio.run(scenario())
    assert not result.from_cache and hits["/a"] == 2


def test_replay_opens_no_socket_and_names_what_is_missing(tmp_path, monkeypatch):
    path = tmp_path / "c.sqlite3"
    with Store.open(path) as store:
        store.put_search("docker license", [SearchResult("https://docs.example/a", "A")])
        from htmlrag_chat.web.results import FetchResult

        store.put_page(
            FetchResult("https://docs.example/a", Outcome.OK, body=ARTICLE.encode(), status=200)
        )

    def no_network(*args, **kwargs):
        raise AssertionError("replay touched the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket.socket, "connect_ex", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)

    async def scenario():
        with Store.open(path, readonly=True) as store:
            recorder = WebRecorder(store, replay=True)
            results = await recorder.search("docker license")
            pages = await recorder.fetch_many(["https://docs.example/a", "https://docs.example/b"])
            with pytest.raises(MissingFromRecording, match="'what is htmlrag'"):
                await recorder.search("what is htmlrag")
            return results, pages

    results, pages = asyncio.run(scenario())
    assert [r.url for r in results] == ["https://docs.example/a"]
    assert pages[0].outcome is Outcome.OK and pages[0].body == ARTICLE.encode()
    assert pages[1].outcome is Outcome.FAILED and pages[1].reason == NOT_RECORDED


def test_an_imported_search_answers_in_record_mode_until_refresh_finds_it_old(tmp_path):
    """``cache import`` stores searches without settings; record mode (whatever its region,
    safesearch, backends and filters) takes them, and goes live only when ``--refresh``
    says they are too old. Live searches go to a loopback SearXNG that answers 429, so "went
    live" is a SearchError and a request it saw."""
    from htmlrag_chat.store.recording import import_jsonl
    from htmlrag_chat.web.search import SearchError

    recording = tmp_path / "rec.jsonl"
    recording.write_text(
        '{"query": "docker license", "results": [{"url": "https://docs.example/a",'
        ' "title": "A", "snippet": "", "html": "<p>Apache</p>"}]}\n',
        encoding="utf-8",
    )
    apis = SearchApis(status={"searxng": 429})

    async def scenario(max_age: float | None) -> list[SearchResult]:
        async with serve_app(apis.app()) as port:
            settings = SearchSettings(
                backends=("searxng",), searxng_url=f"http://127.0.0.1:{port}",
                region="de-de", safesearch="off", time="week",
            )  # fmt: skip
            with Store.open(tmp_path / "c.sqlite3") as store:
                recorder = WebRecorder(store, WebSearcher(settings), max_age=max_age)
                return await recorder.search("docker license")

    with Store.open(tmp_path / "c.sqlite3") as store:
        import_jsonl(store, recording)
    assert [r.url for r in asyncio.run(scenario(None))] == ["https://docs.example/a"]
    assert [r.url for r in asyncio.run(scenario(3600))] == ["https://docs.example/a"]
    with sqlite3.connect(tmp_path / "c.sqlite3") as conn:  # imported 100 s ago
        conn.execute("UPDATE searches SET searched_at = searched_at - 100")
    conn.close()
    assert [r.url for r in asyncio.run(scenario(3600))] == ["https://docs.example/a"]
    assert apis.requests == []
    with pytest.raises(SearchError):
        asyncio.run(scenario(50))
    assert len(apis.sent("searxng")) == 1


def test_searches_are_kept_by_backend_and_filters_and_a_replay_takes_any(tmp_path):
    """A search made with other backends or filters is not these results: record mode asks
    again (and keeps the new one); a replay answers with what was recorded, whatever its
    settings, but still under the sites asked for."""
    apis = SearchApis([("https://example.org/a", "A", ""), ("https://other.net/b", "B", "")])

    async def scenario(replay: bool = False, **changes: object) -> list[str]:
        async with serve_app(apis.app()) as port:
            settings = SearchSettings(searxng_url=f"http://127.0.0.1:{port}", **changes)
            with Store.open(tmp_path / "c.sqlite3") as store:
                recorder = WebRecorder(store, WebSearcher(settings), replay=replay)
                return [result.url for result in await recorder.search("q")]

    both = ["https://example.org/a", "https://other.net/b"]
    assert asyncio.run(scenario(backends=("searxng",))) == both
    assert asyncio.run(scenario(backends=("searxng",))) == both  # from the cache
    assert len(apis.requests) == 1
    assert asyncio.run(scenario(backends=("searxng",), time="day")) == both
    assert asyncio.run(scenario(backends=("searxng",), site=("example.org",))) == both[:1]
    assert len(apis.requests) == 3
    assert apis.requests[1].params["time_range"] == "day"
    assert "site:example.org" in apis.requests[2].params["q"]
    # One row per query, region and safesearch: the last search made is the one kept.
    assert asyncio.run(scenario(replay=True, time="year")) == both[:1]
    assert asyncio.run(scenario(replay=True, exclude_site=("example.org",))) == []
    assert len(apis.requests) == 3
    with Store.open(tmp_path / "c.sqlite3", readonly=True) as store:
        (row,) = store._rows("SELECT backend FROM searches")
    assert row["backend"] == "searxng|site=example.org"


def test_with_a_site_filter_no_page_of_another_site_is_downloaded(tmp_path):
    """Two sites on one loopback server: ``localhost`` and ``127.0.0.1``. With ``site``
    set to one, the other's pages come back skipped and are never requested, and a page
    that redirects to the other site is not used."""
    hits: Counter = Counter()

    async def page(request: web.Request) -> web.StreamResponse:
        hits[f"{request.host.split(':')[0]}{request.path}"] += 1
        if request.path == "/away":
            raise web.HTTPFound(f"http://127.0.0.1:{request.url.port}/there")
        return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")

    async def scenario():
        async with serve(page) as base:
            port = base.rsplit(":", 1)[1]
            urls = [f"http://localhost:{port}/a", f"{base}/b", f"http://localhost:{port}/away"]
            with Store.open(tmp_path / "c.sqlite3") as store:
                settings = SearchSettings(site=("localhost",))
                recorder = WebRecorder(store, WebSearcher(settings), Fetcher(LOOPBACK))
                return await recorder.fetch_many(urls)

    kept, other, away = asyncio.run(scenario())
    assert kept.outcome is Outcome.OK
    assert other.outcome is Outcome.SKIPPED and other.reason == "not on localhost (--site)"
    assert away.outcome is Outcome.SKIPPED and "redirected" in away.reason
    assert set(hits) == {"localhost/a", "localhost/away", "127.0.0.1/there"}  # never /b


@asynccontextmanager
async def slow_site(delays: dict[str, float]):
    """Pages that answer after a delay; a page with no delay given never answers."""

    async def page(request: web.Request) -> web.Response:
        await asyncio.sleep(delays.get(request.path, 3600))
        return web.Response(text=ARTICLE, content_type="text/html", charset="utf-8")

    async with serve(page) as base:
        yield base


def test_the_deadline_leaves_out_a_page_that_never_answers_and_caches_a_late_one(tmp_path):
    async def scenario():
        async with slow_site({"/fast": 0.0, "/late": 1.0}) as base:
            urls = [f"{base}/fast", f"{base}/late", f"{base}/never"]
            with Store.open(tmp_path / "c.sqlite3") as store:
                # The default per-page timeout: LOOPBACK's 0.5 s would fail the late page.
                policy = FetchPolicy(allow_private=True)
                recorder = WebRecorder(store, fetcher=Fetcher(policy))
                loop = asyncio.get_running_loop()
                start = loop.time()
                results = await recorder.fetch_many(urls, deadline=0.3)
                waited = loop.time() - start
                late_before = store.get_page(f"{base}/late")
                left = await recorder.settle(3.0)
                late_after = store.get_page(f"{base}/late")
                never = store.get_page(f"{base}/never")
            return results, waited, late_before, left, late_after, never

    results, waited, late_before, left, late_after, never = asyncio.run(scenario())
    assert [r.outcome for r in results] == [Outcome.OK, Outcome.FAILED, Outcome.FAILED]
    assert all(r.reason.startswith("left out: still downloading") for r in results[1:])
    assert waited < 1.0  # the question went on without the slow pages
    assert late_before is None
    assert late_after is not None and late_after.outcome is Outcome.OK  # cached for next time
    assert left == 1 and never is None  # the page that never answered was given up


def test_without_a_deadline_every_page_is_waited_for(tmp_path):
    async def scenario():
        async with slow_site({"/a": 0.0, "/b": 0.4}) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                return await WebRecorder(store, fetcher=Fetcher(LOOPBACK)).fetch_many(
                    [f"{base}/a", f"{base}/b"]
                )

    assert [r.outcome for r in asyncio.run(scenario())] == [Outcome.OK, Outcome.OK]


# -- failures heal


@pytest.mark.parametrize("how", ["503", "429", "reset", "slow"])
def test_a_transient_failure_is_retried_on_the_next_request(tmp_path, how):
    hits: Counter = Counter()
    failing = {"/a": how}

    async def scenario():
        async with site(hits, failing) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                recorder = WebRecorder(store, fetcher=Fetcher(LOOPBACK))
                (first,) = await recorder.fetch_many([f"{base}/a"])
                failing.clear()  # the site is back
                asked = hits["/a"]
                (second,) = await recorder.fetch_many([f"{base}/a"])
                (third,) = await recorder.fetch_many([f"{base}/a"])
            return first, second, third, hits["/a"] - asked

    first, second, third, asked_again = asyncio.run(scenario())
    assert first.outcome is Outcome.FAILED and first.transient
    assert second.outcome is Outcome.OK and not second.from_cache
    assert third.outcome is Outcome.OK and third.from_cache
    assert asked_again == 1


@pytest.mark.parametrize("how", ["404", "410"])
def test_a_permanent_failure_is_reused_until_its_age_limit(tmp_path, how):
    hits: Counter = Counter()
    failing = {"/a": how}
    path = tmp_path / "c.sqlite3"

    async def fetch(base: str):
        with Store.open(path) as store:
            (result,) = await WebRecorder(store, fetcher=Fetcher(LOOPBACK)).fetch_many(
                [f"{base}/a"]
            )
        return result

    async def scenario():
        async with site(hits, failing) as base:
            first = await fetch(base)
            again = await fetch(base)
            failing.clear()
            cached_still = await fetch(base)  # within the age limit: not asked again
            age(path, FAILURE_MAX_AGE + 60)
            healed = await fetch(base)
        return first, again, cached_still, healed

    first, again, cached_still, healed = asyncio.run(scenario())
    assert first.outcome is Outcome.FAILED and not first.transient and not first.from_cache
    assert again.outcome is Outcome.FAILED and again.from_cache
    assert again.reason == first.reason == cached_still.reason
    assert healed.outcome is Outcome.OK and not healed.from_cache
    assert hits["/a"] == 2


def age(path, seconds: float) -> None:
    """Make every stored page ``seconds`` older, in the file itself."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE pages SET fetched_at = fetched_at - ?", [seconds])
    conn.close()


@pytest.mark.parametrize("how", ["503", "reset", "slow", "404"])
def test_a_failed_refresh_keeps_and_serves_the_good_page(tmp_path, how):
    hits: Counter = Counter()
    failing: dict[str, str] = {}
    path = tmp_path / "c.sqlite3"

    async def scenario():
        async with site(hits, failing) as base:
            with Store.open(path) as store:
                (good,) = await WebRecorder(store, fetcher=Fetcher(LOOPBACK)).fetch_many(
                    [f"{base}/a"]
                )
                failing["/a"] = how
                age(path, 10)
                refresh = WebRecorder(store, max_age=1, fetcher=Fetcher(LOOPBACK))
                (refreshed,) = await refresh.fetch_many([f"{base}/a"])
        return good, refreshed

    good, refreshed = asyncio.run(scenario())
    assert hits["/a"] >= 2  # the refresh did go to the site
    assert refreshed.outcome is Outcome.OK and refreshed.body == good.body == ARTICLE.encode()
    assert refreshed.reason is not None and refreshed.reason.startswith(KEPT_STORED_PAGE)
    with Store.open(path, readonly=True) as store:  # and the file still holds the page
        kept = store.get_page(good.url)
    assert kept.outcome is Outcome.OK and kept.body == ARTICLE.encode()


def test_a_page_blocked_by_the_guard_is_tried_again_once_private_addresses_are_allowed(
    tmp_path,
):
    hits: Counter = Counter()

    async def scenario():
        async with site(hits) as base:
            with Store.open(tmp_path / "c.sqlite3") as store:
                guarded = WebRecorder(store)
                (blocked,) = await guarded.fetch_many([f"{base}/a"])
                (again,) = await guarded.fetch_many([f"{base}/a"])
                (allowed,) = await WebRecorder(store, fetcher=Fetcher(LOOPBACK)).fetch_many(
                    [f"{base}/a"]
                )
        return blocked, again, allowed

    blocked, again, allowed = asyncio.run(scenario())
    assert blocked.outcome is again.outcome is Outcome.BLOCKED and again.from_cache
    assert allowed.outcome is Outcome.OK and hits["/a"] == 1


def test_a_loopback_searxng_is_asked_but_the_pages_it_lists_still_pass_the_guard(tmp_path):
    """The SearXNG instance is the user's own, so loopback is fine for it; a result that
    points at a loopback page is still refused by the fetcher's guard."""

    async def scenario():
        apis = SearchApis()
        async with serve_app(apis.app()) as port:
            base = f"http://127.0.0.1:{port}"
            apis.results.append((f"{base}/search", "a private page", ""))
            settings = SearchSettings(backends=("searxng",), searxng_url=base)
            with Store.open(tmp_path / "c.sqlite3") as store:
                recorder = WebRecorder(store, WebSearcher(settings))
                (result,) = await recorder.search("q")
                return result, await recorder.fetch_many([result.url]), apis.requests

    result, (page,), requests = asyncio.run(scenario())
    assert result.title == "a private page" and len(requests) == 1
    assert page.outcome is Outcome.BLOCKED and len(requests) == 1
