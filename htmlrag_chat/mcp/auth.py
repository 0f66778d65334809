"""The bearer token ``mcp --http`` requires: loopback is not a boundary between local users.

Any process on the machine can connect to 127.0.0.1, so without a secret any local user
could read the conversation history resource and use the tools (and the reader, and the
user's search API keys through them). Every HTTP request must therefore carry
``Authorization: Bearer <token>``; one without it, or with another token, is answered 401
with ``WWW-Authenticate: Bearer`` before it reaches the MCP server. The token is the
``mcp_token`` setting (config file or ``HTMLRAG_CHAT_MCP_TOKEN``), or a new random one for
each start, which ``serve_http`` says on stderr, the one place only the user reads.

A plain ASGI wrapper rather than the SDK's OAuth machinery: there is no authorization server
here, only a shared secret, and the SDK's resource-server mode would advertise one.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from htmlrag_chat.settings.tree import default

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass(frozen=True)
class McpSettings:
    """The ``[mcp]`` section of the settings."""

    mcp_token: str | None = field(default=default("mcp.mcp_token"), repr=False)

    def token(self) -> tuple[str, bool]:
        """The token to require, and whether it was made for this run."""
        return (self.mcp_token, False) if self.mcp_token else (new_token(), True)


def new_token() -> str:
    """A random token of 256 bits, URL-safe, for one run of the server."""
    return secrets.token_urlsafe(32)


class BearerAuth:
    """``app`` for HTTP requests that carry ``token`` as their bearer token; 401 for the
    rest. Other scopes (the server's lifespan) pass through."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._authorized(scope):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="htmlrag-chat mcp"'),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def _authorized(self, scope: Scope) -> bool:
        given = [value for name, value in scope["headers"] if name.lower() == b"authorization"]
        # One header, compared in constant time: a timing side channel must not spell it.
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)
