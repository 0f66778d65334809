"""The guard: only http(s) to public addresses, checked on the URL and again on every name
as it resolves. Nothing here leaves 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.guard import GuardedResolver, Refused, check_url, is_public_address
from htmlrag_chat.web.results import Outcome
from tests.loopback import serve_app

PRIVATE = [
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.1.1",
    "169.254.169.254",  # cloud metadata
    "127.0.0.1",
    "100.64.0.1",  # carrier-grade NAT
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    "0.0.0.0",
    "::",
    "::1",
    "fc00::1",
    "fe80::1",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "2002:7f00:1::",  # 6to4 around 127.0.0.1
    "2001:db8::1",
    "not an address",
]
# IPv6 addresses that reach an IPv4 address inside them, which is what must be judged.
EMBEDDED_PRIVATE = [
    "64:ff9b::a9fe:a9fe",  # NAT64 (RFC 6052) to 169.254.169.254, the metadata service
    "64:ff9b::7f00:1",  # NAT64 to 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 to 10.0.0.1
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64 (RFC 8215), /96 embedding
    "64:ff9b:1:a9fe:a9:fe00::",  # local-use NAT64, /48 embedding (u-octet skipped)
    "64:ff9b:1:7f:0:1::",  # local-use NAT64, /56 embedding of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 around 169.254.169.254
    "2002:c0a8:101::1",  # 6to4 around 192.168.1.1
    "::7f00:1",  # IPv4-compatible 127.0.0.1
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
    "::ffff:0:7f00:1",  # IPv4-translated (SIIT) 127.0.0.1
    "::ffff:a9fe:a9fe",  # IPv4-mapped 169.254.169.254
    # Teredo (2001::/32): the server 65.54.227.120, the client 192.0.2.45 (obfuscated), and
    # one whose client is 127.0.0.1; neither is a web site.
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
]
EMBEDDED_PUBLIC = ["64:ff9b::808:808", "64:ff9b::101:101", "2002:808:808::1"]


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize("address", PRIVATE)
def test_private_addresses(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
def test_an_ipv6_address_around_a_private_ipv4_address_is_private(address: str) -> None:
    assert not is_public_address(address)
    with pytest.raises(Refused, match="is a private or local address"):
        check_url(f"http://[{address}]/latest/meta-data/")


@pytest.mark.parametrize("address", EMBEDDED_PUBLIC)
def test_nat64_and_6to4_around_a_public_ipv4_address_stay_public(address: str) -> None:
    assert is_public_address(address)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "not an http(s) URL (file scheme)"),
        ("ftp://127.0.0.1/", "not an http(s) URL (ftp scheme)"),
        ("javascript:alert(1)", "not an http(s) URL"),
        ("/relative/path", "not an http(s) URL (no scheme)"),
        ("http:///path", "URL has no host"),
        ("http://127.0.0.1:8080/", "127.0.0.1 is a private or local address"),
        ("http://[::1]/", "::1 is a private or local address"),
        ("http://[::ffff:127.0.0.1]/", "private or local address"),
        ("http://169.254.169.254/latest/meta-data/", "private or local address"),
        ("http://2130706433/", "ambiguous numeric host"),
        ("http://127.1/", "ambiguous numeric host"),
    ],
)
def test_check_url_refuses(url: str, reason: str) -> None:
    with pytest.raises(Refused, match=re.escape(reason)):
        check_url(url)


def test_check_url_lets_names_and_public_addresses_through() -> None:
    check_url("https://example.com/page")  # names are judged when they resolve
    check_url("http://8.8.8.8/")
    check_url("HTTP://[2606:4700:4700::1111]:8080/")
    check_url("http://127.0.0.1:8080/", allow_private=True)
    with pytest.raises(Refused):
        check_url("file:///etc/passwd", allow_private=True)


class StubResolver(AbstractResolver):
    """Answers every name with fixed addresses, so that no DNS query leaves the machine."""

    def __init__(self, *addresses: str) -> None:
        self.addresses = addresses

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(hostname=host, host=address, port=port, family=family, proto=0, flags=0)
            for address in self.addresses
        ]

    async def close(self) -> None:
        pass


@pytest.mark.parametrize(
    ("addresses", "refused"),
    [
        (("93.184.216.34",), False),
        (("127.0.0.1",), True),
        (("10.0.0.7",), True),
        (("93.184.216.34", "127.0.0.1"), True),  # one private answer refuses the name
        (("::ffff:192.168.0.1",), True),
        (("64:ff9b::a9fe:a9fe",), True),  # an AAAA answer through NAT64 to the metadata
        (("2606:4700:4700::1111", "64:ff9b:1::7f00:1"), True),
        (("64:ff9b::5db8:d822",), False),  # NAT64 to 93.184.216.34
    ],
)
def test_resolver_judges_every_answer(addresses: tuple[str, ...], refused: bool) -> None:
    resolver = GuardedResolver(resolver=StubResolver(*addresses))
    if refused:
        with pytest.raises(Refused, match=r"rebind\.example resolves to a private"):
            asyncio.run(resolver.resolve("rebind.example", 80))
    else:
        assert len(asyncio.run(resolver.resolve("rebind.example", 80))) == len(addresses)
    allowed = GuardedResolver(allow_private=True, resolver=StubResolver(*addresses))
    assert len(asyncio.run(allowed.resolve("rebind.example", 80))) == len(addresses)


@asynccontextmanager
async def counting_server(requests: list[str]) -> AsyncIterator[int]:
    """A loopback server that records every request it sees; yields its port."""

    async def page(request: web.Request) -> web.Response:
        requests.append(request.path)
        return web.Response(text="<p>hello</p>", content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)
    async with serve_app(app) as port:
        yield port


def test_local_servers_are_blocked_before_any_request() -> None:
    requests: list[str] = []

    async def main() -> list:
        async with counting_server(requests) as port, Fetcher(FetchPolicy()) as fetcher:
            blocked = await fetcher.fetch_many(
                [
                    f"http://127.0.0.1:{port}/literal",
                    f"http://localhost:{port}/name",
                    f"http://[::ffff:127.0.0.1]:{port}/mapped",
                    f"http://[64:ff9b::7f00:1]:{port}/nat64",
                    f"http://[::7f00:1]:{port}/compatible",
                    "file:///etc/passwd",
                    f"ftp://127.0.0.1:{port}/",
                ]
            )
            async with Fetcher(FetchPolicy(allow_private=True)) as allowed:
                control = await allowed.fetch(f"http://localhost:{port}/allowed")
            return [*blocked, control]

    *blocked, control = asyncio.run(main())
    for result in blocked:
        assert result.outcome is Outcome.BLOCKED, result.summary()
        assert result.status is None and result.body is None
    assert "localhost resolves to a private or local address" in blocked[1].reason
    # The server works, and saw only the request that was allowed.
    assert control.outcome is Outcome.CHALLENGE  # two words of text
    assert requests == ["/allowed"]
