"""Which URLs we may fetch: web pages on public addresses, nothing else.

URLs come from search results, so a hostile page can point us anywhere. Reading
``http://127.0.0.1:8080/admin`` or a cloud metadata service and quoting it in an answer is a
server-side request forgery, so only http(s) URLs whose host is a globally routable address
are fetched.

The address is checked twice, because aiohttp has two paths to a socket. Hosts that look
numeric never reach a resolver, so ``check_url`` judges them from the URL. Names are judged
by ``GuardedResolver`` inside the connector, on the very addresses the socket then connects
to: checking a name before the request and letting aiohttp resolve it again would leave a
DNS-rebinding gap (public on the first answer, loopback on the second).
"""

from __future__ import annotations

import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

SCHEMES = frozenset({"http", "https"})

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Refused(Exception):
    """A URL we will not fetch; the message is one line, for users."""


def check_url(url: str | URL, allow_private: bool = False) -> None:
    """Raise ``Refused`` unless ``url`` is http(s) with a host we may connect to.

    Names pass here and are judged at connection time by ``GuardedResolver``.
    """
    try:
        parsed = URL(url)
        host = parsed.host
    except (TypeError, ValueError) as exc:  # yarl raises these (and UnicodeError) for junk
        raise Refused("not a valid URL") from exc
    if parsed.scheme not in SCHEMES:
        raise Refused(f"not an http(s) URL ({parsed.scheme or 'no'} scheme)")
    if not host:
        raise Refused("URL has no host")
    if not _looks_numeric(host):
        return
    try:
        address = ipaddress.ip_address(host)
    except ValueError as exc:
        # 2130706433, 127.1, 0177.0.0.1: legacy forms that socket maps onto some address.
        raise Refused(f"ambiguous numeric host {host}") from exc
    if not allow_private and not is_public_address(address):
        raise Refused(f"{host} is a private or local address")


def is_public_address(ip: str | IPAddress) -> bool:
    """Whether an address is globally routable: not loopback, private, link-local,
    multicast, reserved, unspecified or shared (CGNAT), also when wrapped in IPv6.

    An IPv6 address that reaches an IPv4 address inside it (``embedded_ipv4``) is judged by
    that IPv4 address too: ``[64:ff9b::a9fe:a9fe]`` is the metadata service 169.254.169.254
    through a NAT64 gateway. Anything unparsable is not public.
    """
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # the socket connects to the IPv4 address
            return is_public_address(address.ipv4_mapped)
        if not all(is_public_address(inside) for inside in embedded_ipv4(address)):
            return False
    return address.is_global and not address.is_multicast


# NAT64 prefixes (RFC 6052's well-known one, RFC 8215's local-use one) and where an IPv4
# address can sit in each: after a /96 prefix, or, in the local-use /48, after any prefix
# length an operator may choose (the bits 64-71, the "u" octet, are skipped).
_NAT64_WELL_KNOWN = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
# Byte positions for the prefix lengths /48, /56, /64 and /96.
_NAT64_POSITIONS = ((6, 7, 9, 10), (7, 9, 10, 11), (9, 10, 11, 12), (12, 13, 14, 15))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated, but a socket may take it
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT (RFC 2765)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address may lead to: NAT64 (every position the prefix
    allows), 6to4, Teredo (its server and its client), IPv4-compatible and -translated."""
    packed = address.packed
    found: list[ipaddress.IPv4Address] = []
    if address in _NAT64_WELL_KNOWN:
        found.append(ipaddress.IPv4Address(packed[12:]))
    elif address in _NAT64_LOCAL:
        for positions in _NAT64_POSITIONS:
            found.append(ipaddress.IPv4Address(bytes(packed[i] for i in positions)))
    elif address in _IPV4_TRANSLATED or (
        address in _IPV4_COMPATIBLE and int(address) > 1  # not :: or ::1
    ):
        found.append(ipaddress.IPv4Address(packed[12:]))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


class GuardedResolver(AbstractResolver):
    """aiohttp's resolver, refusing names that resolve to a non-public address.

    One private address among the answers refuses the whole name: a name that mixes public
    and loopback answers is a rebinding trick, not a web site.
    """

    def __init__(
        self, allow_private: bool = False, resolver: AbstractResolver | None = None
    ) -> None:
        self.allow_private = allow_private
        self._resolver = resolver if resolver is not None else DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._resolver.resolve(host, port, family)
        if not self.allow_private:
            for answer in answers:
                if not is_public_address(answer["host"]):
                    raise Refused(f"{host} resolves to a private or local address")
        return answers

    async def close(self) -> None:
        await self._resolver.close()


def _looks_numeric(host: str) -> bool:
    """aiohttp's own test for an IP literal (it then skips the resolver), mirrored exactly
    so that every host skipping the resolver is judged by ``check_url``."""
    return ":" in host or host.replace(".", "").isdigit()
