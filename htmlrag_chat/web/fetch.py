"""Concurrent page downloads where every failure is a result, never an exception.

Search results point at anything: PDFs, 30 MB dumps, gzip bombs, servers that hang or hang
up, bot challenges, local services. A run downloads a batch of them at once and must come
back with whatever pages are readable, plus a one-line reason for each one that is not, so
``fetch`` turns every network and HTTP problem into a ``FetchResult`` with an ``Outcome``.

Redirects are followed by hand so that every hop is checked by the guard (aiohttp's own
redirects would connect first and ask later), bodies are streamed so that the size cap
counts decompressed bytes as they arrive, and content types are checked before a body is
read at all.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType

import aiohttp
from aiohttp import hdrs
from aiohttp.http_exceptions import ContentEncodingError
from yarl import URL

from htmlrag_chat import __version__
from htmlrag_chat.html.decode import looks_binary, normalize_charset
from htmlrag_chat.html.limits import MAX_PAGE_BYTES
from htmlrag_chat.web.guard import GuardedResolver, Refused, check_url
from htmlrag_chat.web.quality import challenge_marker, challenge_reason
from htmlrag_chat.web.results import FetchResult, Outcome

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Cloudflare and other bot walls answer with these; their body says which it is.
CHALLENGE_STATUSES = frozenset({403, 429, 503})
# Statuses that say "not now" rather than "not here": the failure is transient, and the
# next request tries again (every 5xx is too).
TRANSIENT_STATUSES = frozenset({408, 425, 429})
# Response headers worth keeping: what the page is, and what a cache revalidates with.
KEPT_HEADERS = ("content-type", "content-encoding", "last-modified", "etag")

_CHUNK_BYTES = 64 * 1024
_SNIFF_BYTES = 1024  # enough of a body without a content type to tell text from binary

# What each low-level failure means to a user, most specific first: a refused connection
# reaches us wrapped as a connector error, and the refusal is the news.
_FAILURES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    ((aiohttp.ClientConnectorDNSError, socket.gaierror), "DNS lookup failed"),
    (
        (aiohttp.ClientConnectorCertificateError, ssl.SSLCertVerificationError),
        "TLS certificate not trusted",
    ),
    ((aiohttp.ClientSSLError, ssl.SSLError), "TLS handshake failed"),
    (aiohttp.ServerDisconnectedError, "server closed the connection"),
    (ContentEncodingError, "body could not be decompressed"),
    (aiohttp.ClientPayloadError, "response body cut short"),
    (aiohttp.ClientResponseError, "malformed HTTP response"),
    (aiohttp.ClientConnectorError, "cannot connect"),
)
_RESET_NAMED = ConnectionResetError.__name__ + "("
# Everything a network or a server can throw at ``session.get`` and the body read. A
# ValueError is a URL that yarl or IDNA cannot encode.
_NETWORK_ERRORS = (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError)


@dataclass(frozen=True)
class FetchPolicy:
    concurrency: int = 16  # pages at once, all hosts
    per_host: int = 4  # pages at once per host
    connect_timeout: float = 5.0
    total_timeout: float = 20.0  # per page, all redirect hops and the body included
    max_redirects: int = 5
    max_bytes: int = MAX_PAGE_BYTES  # decompressed bytes; reading stops past it (or the cap)
    allow_private: bool = False
    user_agent: str = (
        "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 "
        f"htmlrag-chat/{__version__}"
    )


class _Stop(Exception):
    """Ends a download with an outcome other than OK; only a challenge keeps its body."""

    def __init__(
        self, outcome: Outcome, reason: str, body: bytes | None = None, transient: bool = False
    ) -> None:
        super().__init__(reason)
        self.outcome = outcome
        self.reason = reason
        self.body = body
        self.transient = transient


@dataclass
class _Progress:
    """What is known about a download so far; kept when it ends early, so that a skipped
    PDF still reports its status, type and final URL."""

    url: str
    final_url: str | None = None
    status: int | None = None
    content_type: str | None = None
    charset: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bytes: int = 0

    def note(self, response: aiohttp.ClientResponse) -> None:
        self.final_url = str(response.url)
        self.status = response.status
        # aiohttp reports a missing type as application/octet-stream; we sniff those instead.
        declared = bool(response.headers.get(hdrs.CONTENT_TYPE))
        self.content_type = response.content_type if declared else None
        charset = response.charset
        # Only a web encoding label is kept (the decoder ignores any other: rot13, utf-7);
        # without one, <meta> and detection decide.
        self.charset = charset if charset and normalize_charset(charset) else None
        self.headers = {
            name: response.headers[name] for name in KEPT_HEADERS if name in response.headers
        }


class Fetcher:
    """Downloads pages under a ``FetchPolicy``; one aiohttp session per run.

    Use as an async context manager; ``fetch`` and ``fetch_many`` never raise for network
    or HTTP problems. Creating one opens nothing. Entering it again while it is open (a
    question's downloads while the last one's late pages still arrive) shares the session,
    which closes when the last user leaves.
    """

    def __init__(self, policy: FetchPolicy = FetchPolicy()) -> None:
        self.policy = policy
        self._session: aiohttp.ClientSession | None = None
        self._users = 0
        self._slots = asyncio.Semaphore(policy.concurrency)
        self._host_slots: dict[str, asyncio.Semaphore] = {}

    async def __aenter__(self) -> Fetcher:
        self._users += 1
        if self._session is not None:
            return self
        policy = self.policy
        # Fresh per opening: a semaphore belongs to the event loop that first waited on it.
        self._slots = asyncio.Semaphore(policy.concurrency)
        self._host_slots = {}
        connector = aiohttp.TCPConnector(
            limit=policy.concurrency,
            limit_per_host=policy.per_host,
            resolver=GuardedResolver(policy.allow_private),
        )
        # trust_env stays off: through a proxy, the proxy would resolve names past the guard.
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers={
                hdrs.USER_AGENT: policy.user_agent,
                hdrs.ACCEPT: "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
                hdrs.ACCEPT_LANGUAGE: "en-US,en;q=0.8,*;q=0.5",
            },
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._users -= 1
        if self._users == 0 and self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def fetch_many(
        self, urls: Sequence[str], on_result: Callable[[FetchResult], None] | None = None
    ) -> list[FetchResult]:
        """Fetch all ``urls`` concurrently; results in input order, ``on_result`` called as
        each one finishes (for progress)."""

        async def one(url: str) -> FetchResult:
            result = await self.fetch(url)
            if on_result is not None:
                on_result(result)
            return result

        return list(await asyncio.gather(*(one(url) for url in urls)))

    async def fetch(self, url: str) -> FetchResult:
        """Download one page; every failure comes back as a result with a reason."""
        if self._session is None:
            raise RuntimeError("use Fetcher as an async context manager")
        progress = _Progress(url)
        fetched_at = time.time()
        start = time.perf_counter()
        body: bytes | None = None
        transient = False
        try:
            check_url(url, self.policy.allow_private)  # a refused URL does not wait its turn
            async with self._slots:
                start = time.perf_counter()
                body = await self._download(self._session, progress)
            # Cleaning a page is CPU work: off the event loop, and after the slot is free.
            reason = await asyncio.to_thread(challenge_reason, body, progress.charset)
            outcome = Outcome.OK if reason is None else Outcome.CHALLENGE
        except Refused as refused:
            outcome, reason = Outcome.BLOCKED, str(refused)
        except _Stop as stop:
            outcome, reason, body, transient = stop.outcome, stop.reason, stop.body, stop.transient
        except _NETWORK_ERRORS as error:
            outcome, reason = Outcome.FAILED, self._describe(error)
            # A URL that cannot be encoded fails the same way every time; the network may not.
            transient = not isinstance(error, ValueError)
        return FetchResult(
            url=url,
            outcome=outcome,
            reason=reason,
            final_url=progress.final_url,
            status=progress.status,
            content_type=progress.content_type,
            charset=progress.charset,
            headers=progress.headers,
            body=body,
            bytes=progress.bytes,
            ms=(time.perf_counter() - start) * 1000,
            fetched_at=fetched_at,
            transient=transient,
        )

    async def _download(self, session: aiohttp.ClientSession, progress: _Progress) -> bytes:
        """Follow redirects by hand, re-checking each hop, then read the final page.

        The time limit is a budget for the whole page: each hop gets what the earlier ones
        left, and time spent waiting for a per-host slot is not charged.
        """
        policy = self.policy
        url = URL(progress.url)
        seen = {url}
        budget = policy.total_timeout
        for _ in range(policy.max_redirects + 1):
            check_url(url, policy.allow_private)
            async with self._host_slot(url):
                began = time.monotonic()
                if budget <= 0:
                    raise TimeoutError
                timeout = aiohttp.ClientTimeout(total=budget, sock_connect=policy.connect_timeout)
                async with session.get(url, allow_redirects=False, timeout=timeout) as response:
                    progress.note(response)
                    target = _redirect_target(response)
                    if target is None:
                        return await self._read_page(response, progress)
                budget -= time.monotonic() - began
            if target in seen:
                raise _Stop(Outcome.FAILED, f"redirect loop at {target}")
            seen.add(target)
            url = target
        raise _Stop(Outcome.FAILED, f"more than {policy.max_redirects} redirects")

    def _host_slot(self, url: URL) -> asyncio.Semaphore:
        """The per-host limit, held for one hop: a redirect to another host takes that
        host's slot instead, and no page ever holds two (no deadlock)."""
        host = url.host or ""
        slot = self._host_slots.get(host)
        if slot is None:
            slot = self._host_slots[host] = asyncio.Semaphore(self.policy.per_host)
        return slot

    async def _read_page(self, response: aiohttp.ClientResponse, progress: _Progress) -> bytes:
        """The body of a final response, if it is HTML within the size cap."""
        if not 200 <= response.status < 300:
            raise await self._http_error(response, progress)
        if progress.content_type is not None and progress.content_type not in HTML_TYPES:
            raise _Stop(Outcome.SKIPPED, f"not HTML ({progress.content_type})")
        body = await self._read_body(response, progress)
        if not body.strip():
            raise _Stop(Outcome.SKIPPED, "empty page")
        return body

    async def _http_error(self, response: aiohttp.ClientResponse, progress: _Progress) -> _Stop:
        """An HTTP error is FAILED, unless its body is a bot challenge (Cloudflare serves
        its challenge with 403 or 503): users should learn that the page is walled off."""
        status = response.status
        failed = _Stop(
            Outcome.FAILED,
            f"HTTP {status} {response.reason or ''}".strip(),
            transient=status >= 500 or status in TRANSIENT_STATUSES,
        )
        if response.status not in CHALLENGE_STATUSES or progress.content_type not in HTML_TYPES:
            return failed
        try:
            body = await self._read_body(response, progress)
        except _Stop:
            return failed
        marker = challenge_marker(body)
        if marker is None:
            return failed
        return _Stop(Outcome.CHALLENGE, f"bot challenge page ({marker!r}, {failed.reason})", body)

    async def _read_body(self, response: aiohttp.ClientResponse, progress: _Progress) -> bytes:
        """Stream the (decompressed) body, stopping as soon as it passes ``max_bytes``.

        A body with no content type is sniffed once its first bytes are in, so an
        undeclared binary download stops there.
        """
        limit = min(self.policy.max_bytes, MAX_PAGE_BYTES)
        too_large = _Stop(Outcome.SKIPPED, f"larger than {_size(limit)}")
        declared_length = response.content_length
        if hdrs.CONTENT_ENCODING not in response.headers and (declared_length or 0) > limit:
            raise too_large
        sniff = progress.content_type is None
        chunks: list[bytes] = []
        async for chunk in response.content.iter_chunked(_CHUNK_BYTES):
            progress.bytes += len(chunk)
            if progress.bytes > limit:
                raise too_large
            chunks.append(chunk)
            if sniff and progress.bytes >= _SNIFF_BYTES:
                _refuse_binary(b"".join(chunks))
                sniff = False
        body = b"".join(chunks)
        if sniff:
            _refuse_binary(body)
        return body

    def _describe(self, error: BaseException) -> str:
        """A one-line reason for a network failure, naming the cause a user can act on."""
        policy = self.policy
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            return f"could not connect within {policy.connect_timeout:g} s"
        if isinstance(error, asyncio.TimeoutError):
            return f"timed out after {policy.total_timeout:g} s"
        links = list(_chain(error))
        if any(_is_reset(link) for link in links):
            return "connection reset"
        for kind, reason in _FAILURES:
            if any(isinstance(link, kind) for link in links):
                return reason
        return str(error).splitlines()[0] if str(error) else type(error).__name__


def _redirect_target(response: aiohttp.ClientResponse) -> URL | None:
    """Where a redirect points (resolved against the response URL), or None when the
    response is not one; a 3xx without a Location ends as an HTTP error."""
    location = response.headers.get(hdrs.LOCATION)
    if response.status not in REDIRECT_STATUSES or not location:
        return None
    return response.url.join(URL(location)).with_fragment(None)


def _refuse_binary(head: bytes) -> None:
    if looks_binary(head):
        raise _Stop(Outcome.SKIPPED, "binary data without a content type")


def _chain(error: BaseException) -> Iterator[BaseException]:
    """An exception and the ones it was raised from, outermost first."""
    seen: set[int] = set()
    link: BaseException | None = error
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        yield link
        link = link.__cause__ or link.__context__


def _is_reset(error: BaseException) -> bool:
    """A reset connection. In the middle of a body, aiohttp (3.14) leaves the reset out of
    the exception chain and only names it in the payload error's message."""
    if isinstance(error, aiohttp.ClientPayloadError):
        return _RESET_NAMED in str(error)
    # aiohttp re-raises a reset before the body as a ClientOSError with the same errno.
    return isinstance(error, ConnectionResetError) or (
        isinstance(error, OSError) and error.errno == errno.ECONNRESET
    )


def _size(limit: int) -> str:
    return f"{limit / 2**20:.3g} MiB"
