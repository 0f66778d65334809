"""Downloads over real HTTP on loopback: one server per test, every way a page can go wrong.

Most endpoints are an ``aiohttp.web`` app. Responses aiohttp would not send (no content
type at all, a connection reset mid-body) come from a raw asyncio server.
"""

from __future__ import annotations

import asyncio
import gzip
import socket
import struct
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.limits import MAX_PAGE_BYTES, TOO_LARGE
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.quality import challenge_reason
from htmlrag_chat.web.results import FetchResult, Outcome
from tests.conftest import PAGES
from tests.loopback import unused_port

ARTICLE = " ".join(f"Sentence {n} of a page about otters and their rivers." for n in range(40))
PAGE = f"<html><head><title>Otters</title></head><body><p>{ARTICLE}</p></body></html>".encode()
CAFE = (
    '<html><head><meta charset="windows-1252"><title>Menu</title></head>'
    f"<body><p>Un café au lait. {ARTICLE}</p></body></html>"
).encode("cp1252")
RUSSIAN = "Выдры живут у рек и едят рыбу."  # noqa: RUF001 (Cyrillic on purpose)
KOI8 = (
    f'<html><head><meta charset="koi8-r"></head><body><p>{RUSSIAN} {ARTICLE}</p></body></html>'
).encode("koi8-r")
CLOUDFLARE = b"""<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta name="robots" content="noindex,nofollow"></head><body><div class="main-wrapper">
<div class="main-content"><h1 class="zone-name-title h1">example.com</h1>
<h2 class="h2">Verifying you are human. This may take a few seconds.</h2>
<div id="challenge-stage"></div><noscript>Enable JavaScript and cookies to continue</noscript>
</div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone: "example.com"};
var a = document.createElement('script');
a.src = '/cdn-cgi/challenge-platform/h/b/orchestrate/chl_page/v1?ray=8fcb3f8a0cc56750';
document.getElementsByTagName('head')[0].appendChild(a);}());</script></body></html>"""
JS_SHELL = b"""<!doctype html><html><head><title>App</title>
<script defer src="/static/js/main.4f2c1.js"></script></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript><div id="root"></div>
</body></html>"""
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 16
PDF = b"%PDF-1.7\n" + b"\x00" * (2 * 2**20)
HUGE_BYTES = 30 * 2**20
BOMB = web.AppKey("bomb", bytes)
SHORT = FetchPolicy(allow_private=True, total_timeout=0.5)


def gzip_bomb(mib: int) -> bytes:
    """A valid gzip stream of ``mib`` MiB of spaces, about 1 KB per MiB: one compressed MiB,
    fully flushed (byte-aligned, no references back), repeated; compressing it all would
    take seconds."""
    block = b" " * 2**20
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
    return first + again * (mib - 1) + end + struct.pack("<II", crc, (mib * 2**20) % 2**32)


@dataclass
class ServerState:
    requests: list[str] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    huge_finished: bool = False
    # /delayed holds each request until this many are in flight at once (0: no wait).
    hold_until: int = 0
    reached: asyncio.Event = field(default_factory=asyncio.Event)


def make_app(state: ServerState) -> web.Application:
    @web.middleware
    async def record(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        state.requests.append(request.path)
        return await handler(request)

    def html(body: bytes, status: int = 200, charset: str | None = "utf-8") -> web.Response:
        return web.Response(body=body, status=status, content_type="text/html", charset=charset)

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return html(PAGE)

    async def slow_body(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(PAGE[:100])
        await asyncio.sleep(3)
        await response.write(PAGE[100:])
        return response

    async def delayed(request: web.Request) -> web.Response:
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        if state.in_flight >= state.hold_until:
            state.reached.set()
        try:
            await state.reached.wait()
            await asyncio.sleep(0.01)  # a little longer in flight, for others to join
        finally:
            state.in_flight -= 1
        return html(PAGE)

    async def huge(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        if "declared" in request.query:
            response.content_length = HUGE_BYTES
        await response.prepare(request)
        chunk = b"<p>" + b"otter " * 10_000 + b"</p>"
        sent = 0
        while sent < HUGE_BYTES:
            piece = chunk[: HUGE_BYTES - sent]
            await response.write(piece)
            sent += len(piece)
        state.huge_finished = True
        return response

    async def bomb(request: web.Request) -> web.Response:
        return web.Response(
            body=request.app[BOMB],
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        )

    async def gzipped(request: web.Request) -> web.Response:
        return web.Response(
            body=gzip.compress(PAGE),
            headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"},
        )

    async def chain(request: web.Request) -> web.Response:
        hops = int(request.match_info["hops"])
        target = "/page" if hops == 0 else f"/chain/{hops - 1}"
        raise web.HTTPFound(target)

    def constant(response: Callable[[], web.StreamResponse]) -> Callable:
        async def handler(request: web.Request) -> web.StreamResponse:
            return response()

        return handler

    def redirect(location: str) -> Callable:
        async def handler(request: web.Request) -> web.StreamResponse:
            raise web.HTTPFound(location)

        return handler

    app = web.Application(middlewares=[record])
    app[BOMB] = gzip_bomb(256)
    app.router.add_get("/page", constant(lambda: html(PAGE)))
    app.router.add_get("/slow", slow)
    app.router.add_get("/slow-body", slow_body)
    app.router.add_get("/delayed/{n}", delayed)
    app.router.add_get("/missing", constant(lambda: web.Response(status=404, text="nope")))
    app.router.add_get("/error", constant(lambda: html(b"<p>oops</p>", status=500)))
    app.router.add_get("/busy", constant(lambda: web.Response(status=429, text="later")))
    app.router.add_get("/gone", constant(lambda: web.Response(status=410, text="gone")))
    app.router.add_get("/loop/a", redirect("/loop/b"))
    app.router.add_get("/loop/b", redirect("/loop/a"))
    app.router.add_get("/chain/{hops}", chain)
    app.router.add_get("/to-file", redirect("file:///etc/passwd"))
    app.router.add_get("/huge", huge)
    app.router.add_get("/bomb", bomb)
    app.router.add_get("/gzipped", gzipped)
    app.router.add_get("/wrong-charset", constant(lambda: html(CAFE, charset="utf-8")))
    app.router.add_get("/no-charset", constant(lambda: html(KOI8, charset=None)))
    app.router.add_get(
        "/pdf", constant(lambda: web.Response(body=PDF, content_type="application/pdf"))
    )
    app.router.add_get("/challenge", constant(lambda: html(CLOUDFLARE, status=403)))
    app.router.add_get("/just-a-moment", constant(lambda: html(CLOUDFLARE)))
    app.router.add_get("/js-shell", constant(lambda: html(JS_SHELL)))
    return app


@asynccontextmanager
async def serve(state: ServerState) -> AsyncIterator[str]:
    """Run the test app on 127.0.0.1; yields its base URL."""
    runner = web.AppRunner(make_app(state), handler_cancellation=True, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def raw_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Responses aiohttp.web would not send: no Content-Type, or a body cut off."""
    path = (await reader.readline()).split()[1]
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    if path in (b"/binary", b"/untyped"):
        body = BINARY if path == b"/binary" else PAGE
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()
        return
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
    writer.write(head + PAGE[:500])
    await writer.drain()
    await asyncio.sleep(0.05)  # let the client read the headers first
    if path == b"/reset":
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # with linger 0: a TCP reset
    else:
        writer.close()  # a clean close, 500 bytes into 100000


@asynccontextmanager
async def serve_raw() -> AsyncIterator[str]:
    server = await asyncio.start_server(raw_handler, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await server.wait_closed()


def fetch_all(
    urls: list[str], policy: FetchPolicy = SHORT, state: ServerState | None = None
) -> list[FetchResult]:
    """Fetch ``urls`` (with ``{app}`` and ``{raw}`` filled in) from fresh test servers."""

    async def main() -> list[FetchResult]:
        async with serve(state or ServerState()) as app, serve_raw() as raw, Fetcher(policy) as f:
            return await f.fetch_many([url.format(app=app, raw=raw) for url in urls])

    return asyncio.run(main())


def test_one_batch_of_every_failure_keeps_the_good_pages() -> None:
    refused = f"http://127.0.0.1:{unused_port()}/"
    expected = {
        "{app}/page": (Outcome.OK, None),
        "{app}/gzipped": (Outcome.OK, None),
        "{raw}/untyped": (Outcome.OK, None),
        "{app}/wrong-charset": (Outcome.OK, None),
        "{app}/no-charset": (Outcome.OK, None),
        "{app}/chain/4": (Outcome.OK, None),
        "{app}/slow": (Outcome.FAILED, "timed out after 0.5 s"),
        "{app}/slow-body": (Outcome.FAILED, "timed out after 0.5 s"),
        "{raw}/reset": (Outcome.FAILED, "connection reset"),
        "{raw}/cut": (Outcome.FAILED, "response body cut short"),
        refused: (Outcome.FAILED, "connection refused"),
        "{app}/missing": (Outcome.FAILED, "HTTP 404 Not Found"),
        "{app}/error": (Outcome.FAILED, "HTTP 500 Internal Server Error"),
        "{app}/busy": (Outcome.FAILED, "HTTP 429 Too Many Requests"),
        "{app}/gone": (Outcome.FAILED, "HTTP 410 Gone"),
        "{app}/loop/a": (Outcome.FAILED, "redirect loop at"),
        "{app}/chain/9": (Outcome.FAILED, "more than 5 redirects"),
        "{app}/huge": (Outcome.SKIPPED, "larger than 5 MiB"),
        "{app}/huge?declared": (Outcome.SKIPPED, "larger than 5 MiB"),
        "{app}/bomb": (Outcome.SKIPPED, "larger than 5 MiB"),
        "{app}/pdf": (Outcome.SKIPPED, "not HTML (application/pdf)"),
        "{raw}/binary": (Outcome.SKIPPED, "binary data without a content type"),
        "{app}/challenge": (Outcome.CHALLENGE, "bot challenge page"),
        "{app}/just-a-moment": (Outcome.CHALLENGE, "bot challenge page"),
        "{app}/js-shell": (Outcome.CHALLENGE, "no readable text"),
        "{app}/to-file": (Outcome.BLOCKED, "not an http(s) URL"),
        "ftp://127.0.0.1/file": (Outcome.BLOCKED, "not an http(s) URL"),
    }
    transient = {
        "{app}/slow", "{app}/slow-body", "{raw}/reset", "{raw}/cut", refused, "{app}/error",
        "{app}/busy",
    }  # fmt: skip
    state = ServerState()
    results = dict(zip(expected, fetch_all(list(expected), state=state), strict=True))

    for url, (outcome, reason) in expected.items():
        result = results[url]
        assert result.outcome is outcome, (url, result.summary())
        if reason is None:
            assert result.reason is None
        else:
            assert result.reason is not None and result.reason.startswith(reason), url
        assert (result.body is not None) == (outcome in (Outcome.OK, Outcome.CHALLENGE)), url
        assert result.fetched_at > 0 and result.ms >= 0
        # Only what may go away by itself is transient (the cache never keeps those).
        assert result.transient == (url in transient), url

    page = results["{app}/page"]
    assert page.body == PAGE and page.bytes == len(PAGE) and page.status == 200
    assert page.content_type == "text/html" and page.charset == "utf-8"
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert results["{app}/gzipped"].body == PAGE
    assert results["{app}/gzipped"].headers["content-encoding"] == "gzip"
    assert results["{raw}/untyped"].content_type is None
    assert results["{app}/chain/4"].final_url is not None
    assert results["{app}/chain/4"].final_url.endswith("/page")
    assert results["{app}/missing"].status == 404
    assert results["{app}/challenge"].status == 403
    assert results["{app}/challenge"].body == CLOUDFLARE
    assert results["{app}/pdf"].bytes == 0
    assert results["{app}/huge?declared"].bytes == 0
    # The caps count decompressed bytes as they stream: reading stops one chunk past 5 MiB.
    for url in ("{app}/huge", "{app}/bomb"):
        assert 5 * 2**20 < results[url].bytes <= 5 * 2**20 + 64 * 1024, url
    assert not state.huge_finished
    # The /to-file redirect was requested, its target never was.
    assert "/to-file" in state.requests


def test_charsets_come_back_as_declared_and_bodies_untouched() -> None:
    wrong, missing = fetch_all(["{app}/wrong-charset", "{app}/no-charset"])
    assert wrong.charset == "utf-8" and wrong.body == CAFE
    assert "Un café au lait" in decode_html(wrong.body, wrong.charset).text
    assert missing.charset is None and missing.body == KOI8
    assert RUSSIAN in decode_html(missing.body, missing.charset).text


def test_pages_are_fetched_concurrently_within_the_per_host_limit() -> None:
    """The server answers no page until ten are in flight at once: fetched one at a time
    (or fewer than ten at once) the pages would wait for their timeout and fail. Proven by
    what the server saw, not by a clock."""
    urls = [f"{{app}}/delayed/{n}" for n in range(50)]
    state = ServerState(hold_until=10)
    policy = FetchPolicy(allow_private=True, concurrency=32, per_host=10, total_timeout=60)

    async def main() -> list[FetchResult]:
        async with serve(state) as app, Fetcher(policy) as fetcher:
            return await fetcher.fetch_many([url.format(app=app) for url in urls])

    results = asyncio.run(main())
    assert all(result.outcome is Outcome.OK for result in results), results[0].summary()
    assert [result.url.rsplit("/", 1)[1] for result in results] == [str(n) for n in range(50)]
    assert state.max_in_flight == 10  # ten at once, never more for one host


def test_on_result_reports_each_page_as_it_finishes() -> None:
    seen: list[str] = []

    async def main(urls: list[str]) -> list[FetchResult]:
        async with serve(ServerState()) as app, Fetcher(SHORT) as fetcher:
            return await fetcher.fetch_many(
                [url.format(app=app) for url in urls], on_result=lambda r: seen.append(r.url)
            )

    results = asyncio.run(main(["{app}/slow", "{app}/page", "{app}/missing"]))
    assert [result.outcome for result in results] == [Outcome.FAILED, Outcome.OK, Outcome.FAILED]
    assert seen[-1].endswith("/slow")  # it finished last, yet its result is first
    assert sorted(seen) == sorted(result.url for result in results)


def test_fetch_needs_the_context_manager() -> None:
    with pytest.raises(RuntimeError, match="context manager"):
        asyncio.run(Fetcher().fetch("http://127.0.0.1:9/"))


def test_challenge_reason_tells_walls_from_pages() -> None:
    assert challenge_reason(CLOUDFLARE) is not None
    assert challenge_reason(JS_SHELL) is not None
    assert challenge_reason(PAGE) is None
    assert challenge_reason(CAFE, "no-such-charset") is None
    # A real page behind Cloudflare loads its bot-detection script; it is still a page.
    script = b"<script src='/cdn-cgi/challenge-platform/scripts/jsd/main.js'></script>"
    assert challenge_reason(PAGE.replace(b"</body>", script + b"</body>")) is None
    # So is a long page with a captcha in its comment form.
    captcha = b"<form><div class='g-recaptcha' data-sitekey='x'></div></form>"
    for fixture in PAGES:
        assert challenge_reason(fixture.data.replace(b"</body>", captcha + b"</body>")) is None


def test_no_policy_raises_the_page_cap() -> None:
    """The fetcher's limit is the one cap on a page everywhere: a policy may lower it, never
    raise it (a bigger page would only be refused later, after filling memory)."""
    generous = FetchPolicy(allow_private=True, total_timeout=5, max_bytes=64 * 2**20)
    for result in fetch_all(["{app}/huge", "{app}/bomb"], generous):
        assert result.outcome is Outcome.SKIPPED and result.reason == TOO_LARGE
        assert MAX_PAGE_BYTES < result.bytes <= MAX_PAGE_BYTES + 64 * 1024
