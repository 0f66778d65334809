"""A loopback server speaking the search APIs' documented JSON, for the search backends'
tests: SearXNG's ``GET /search?format=json`` (``results``: url, title, content, engine,
score; 403 without the json format), the Brave Search API's ``GET /res/v1/web/search``
(``web.results``: title, url, description; the key in ``X-Subscription-Token``) and Tavily's
``POST /search`` (``results``: title, url, content, score; the key as a Bearer token).

``status`` makes an API answer with that error instead (429 is a rate limit), in the shape
the API documents; every request is kept in ``requests`` so tests see what was sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.loopback import ThreadedApp

BRAVE_PATH = "/res/v1/web/search"
KEY = "test-key-0123456789"  # what the server accepts; tests check it never leaks


@dataclass
class Seen:
    api: str
    params: dict[str, str]
    headers: dict[str, str]
    body: dict[str, Any] | None = None


@dataclass
class SearchApis:
    """What each API answers: ``results`` as (url, title, snippet), ``status`` per API."""

    results: list[tuple[str, str, str]] = field(default_factory=list)
    status: dict[str, int] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_get(BRAVE_PATH, self._brave)
        app.router.add_post("/search", self._tavily)
        return app

    def sent(self, api: str) -> list[Seen]:
        return [seen for seen in self.requests if seen.api == api]

    async def _searxng(self, request: web.Request) -> web.Response:
        self._keep("searxng", request)
        if request.query.get("format") != "json":
            return web.Response(status=403, text="403 Forbidden")
        if "searxng" in self.status:
            return web.Response(status=self.status["searxng"], text="Too Many Requests")
        results = [
            {"url": url, "title": title, "content": snippet, "engine": "loopback", "score": 1.0}
            for url, title, snippet in self.results
        ]
        return web.json_response(
            {
                "query": request.query.get("q", ""),
                "number_of_results": len(results),
                "results": results,
                "answers": [],
                "corrections": [],
                "infoboxes": [],
                "suggestions": [],
                "unresponsive_engines": [],
            }
        )

    async def _brave(self, request: web.Request) -> web.Response:
        self._keep("brave-api", request)
        if request.headers.get("X-Subscription-Token") != KEY:
            return _brave_error(401, "SUBSCRIPTION_TOKEN_INVALID")
        if "brave-api" in self.status:
            return _brave_error(self.status["brave-api"], "RATE_LIMITED")
        results = [
            {"title": title, "url": url, "description": snippet, "type": "search_result"}
            for url, title, snippet in self.results
        ]
        return web.json_response(
            {
                "type": "search",
                "query": {"original": request.query.get("q", "")},
                "web": {"type": "search", "results": results},
            }
        )

    async def _tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._keep("tavily", request, body)
        if request.headers.get("Authorization") != f"Bearer {KEY}":
            return web.json_response({"detail": {"error": "Unauthorized"}}, status=401)
        if "tavily" in self.status:
            status = self.status["tavily"]
            return web.json_response({"detail": {"error": "rate limit"}}, status=status)
        results = [
            {"title": title, "url": url, "content": snippet, "score": 0.9, "raw_content": None}
            for url, title, snippet in self.results
        ]
        return web.json_response(
            {"query": body.get("query"), "answer": None, "images": [], "results": results,
             "response_time": 0.01},
        )  # fmt: skip

    def _keep(self, api: str, request: web.Request, body: dict[str, Any] | None = None) -> None:
        self.requests.append(Seen(api, dict(request.query), dict(request.headers), body))


def _brave_error(status: int, code: str) -> web.Response:
    error = {"id": "x", "status": status, "code": code, "detail": code.lower()}
    return web.json_response({"type": "ErrorResponse", "error": error}, status=status)


@contextmanager
def searxng_config(
    monkeypatch: pytest.MonkeyPatch, folder: Path, apis: SearchApis
) -> Iterator[Path]:
    """A settings file (``$HTMLRAG_CHAT_CONFIG``) naming one search backend: ``apis``'s
    SearXNG, on a loopback server in a thread for the CLI. With ``status={"searxng": 429}``
    every live search fails at once, so what a command answers comes from the cache."""
    with ThreadedApp(apis.app()) as port:
        config = folder / "search.toml"
        config.write_text(
            f'[search]\nbackends = ["searxng"]\nsearxng_url = "http://127.0.0.1:{port}"\n',
            encoding="utf-8",
        )
        monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(config))
        yield config
