"""A SOCKS5 proxy on 127.0.0.1 speaking RFC 1928 (no authentication, CONNECT only), for the
tests of ``--proxy socks5://...``: it keeps the destination each client asked for (a name
when the client leaves name lookup to the proxy, ``socks5h``; an address when it looked the
name up itself) and connects every one of them to ``target`` on loopback, as a proxy on
another machine would reach the named host."""

from __future__ import annotations

import asyncio
import ipaddress
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

SOCKS_VERSION, NO_AUTH, CONNECT = 5, 0, 1
IPV4, NAME, IPV6 = 1, 3, 4


@dataclass
class Socks5:
    target: int  # the loopback port every destination is connected to
    asked: list[tuple[str, int]] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            version, methods = await reader.readexactly(2)
            offered = await reader.readexactly(methods)
            if version != SOCKS_VERSION or NO_AUTH not in offered:
                writer.write(bytes([SOCKS_VERSION, 0xFF]))  # no acceptable method
                return
            writer.write(bytes([SOCKS_VERSION, NO_AUTH]))
            version, command, _, kind = await reader.readexactly(4)
            if kind == IPV4:
                host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
            elif kind == IPV6:
                host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
            else:
                host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
            (port,) = struct.unpack("!H", await reader.readexactly(2))
            self.asked.append((host, port))
            if command != CONNECT:
                writer.write(bytes([SOCKS_VERSION, 7, 0, IPV4, 0, 0, 0, 0, 0, 0]))
                return
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.target
            )
            writer.write(bytes([SOCKS_VERSION, 0, 0, IPV4, 127, 0, 0, 1, 0, 0]))
            await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            with suppress(ConnectionError):
                writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with suppress(ConnectionError):
            writer.close()


@asynccontextmanager
async def socks5_proxy(target: int) -> AsyncIterator[tuple[int, Socks5]]:
    """A SOCKS5 proxy in this loop that connects every destination to ``target``; yields
    its port and what it saw."""
    proxy = Socks5(target)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], proxy
    finally:
        server.close()
