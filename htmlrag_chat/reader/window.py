"""What a reader server says about itself: its context window and its own token counts.

The pruning budget must fit the window the reader really has, counted in its own tokens.
Each local server says so in its own way, asked here in one short request each:

- llama.cpp's server: ``GET /props`` (``default_generation_settings.n_ctx``) and
  ``POST /tokenize``; llama-cpp-python's server: ``POST /extras/tokenize/count``.
- Ollama: ``POST /api/show`` (``num_ctx`` among the parameters, else the model's
  ``context_length`` capped at Ollama's default window of 4096, which it applies silently).
- vLLM: ``max_model_len`` in its ``/v1/models`` listing.
- LM Studio: ``GET /api/v0/models`` (``loaded_context_length``, else ``max_context_length``).

A server that answers none of these leaves the window unknown (``context_tokens`` in the
config file then says it), and budgets are counted with ``--tokenizer``.
"""

from __future__ import annotations

import http.client
import json
import re
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from typing import Any

from htmlrag_chat.base.received import loads
from htmlrag_chat.reader import ReaderFailed

ASK_SECONDS = 2.0
OLLAMA_DEFAULT_WINDOW = 4096
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)", re.MULTILINE)


def server_root(base_url: str) -> str:
    """``http://host:port`` of a ``.../v1`` base URL."""
    return base_url.rstrip("/").removesuffix("/v1")


def _ask(url: str, body: dict[str, Any] | None = None, api_key: str | None = None) -> Any:
    """JSON from ``url`` (POST when there is a body), or None on any failure. Loopback
    never goes through a proxy."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=ASK_SECONDS) as response:
            return loads(response.read(1 << 20))
    except (OSError, ValueError):
        return None


def context_window(
    server: str, base_url: str, model: str, api_key: str | None = None
) -> int | None:
    """The window ``model`` has on the server named ``server`` (discover.py's names)."""
    root = server_root(base_url)
    if server == "Ollama":
        shown = _ask(f"{root}/api/show", {"model": model}, api_key)
        return _ollama_window(shown) if isinstance(shown, dict) else None
    if server == "LM Studio":
        listing = _ask(f"{root}/api/v0/models", api_key=api_key)
        entry = _entry(listing, model)
        value = entry.get("loaded_context_length") or entry.get("max_context_length")
        return value if isinstance(value, int) and value > 0 else None
    if server == "llama.cpp":
        props = _ask(f"{root}/props", api_key=api_key)
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        value = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(value, int) and value > 0:
            return value
    value = _entry(_ask(f"{base_url.rstrip('/')}/models", api_key=api_key), model).get(
        "max_model_len"
    )  # vLLM, and any server that says it the same way
    return value if isinstance(value, int) and value > 0 else None


def _entry(listing: Any, model: str) -> dict[str, Any]:
    entries = listing.get("data") if isinstance(listing, dict) else None
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict) and entry.get("id") == model:
            return entry
    return {}


def _ollama_window(shown: dict[str, Any]) -> int | None:
    """``num_ctx`` when the model sets it, else the model's length capped at Ollama's
    default window (what Ollama really reads: it truncates the rest silently)."""
    found = _NUM_CTX.search(shown.get("parameters") or "")
    if found:
        return int(found.group(1))
    info = shown.get("model_info")
    lengths = [
        value
        for key, value in (info.items() if isinstance(info, dict) else ())
        if key.endswith(".context_length") and isinstance(value, int)
    ]
    return min([OLLAMA_DEFAULT_WINDOW, *lengths])


@dataclass
class ServerTokenCounter:
    """Counts with the server's own tokenizer, text by text (remembered: pruning counts
    the same blocks again), over one kept-alive connection: pruning asks for hundreds of
    counts, and a connection for each cost a round trip more (2.4 ms a count instead of 2.0
    against llama-cpp-python's server even on loopback, ``bench/server_counts.py``; a TLS
    handshake more against a server elsewhere)."""

    base_url: str
    name: str
    route: str  # "/tokenize" (llama.cpp) or "/extras/tokenize/count" (llama-cpp-python)
    exact: bool = True
    _seen: dict[str, int] = field(default_factory=dict, repr=False)
    _connection: _Connection | None = field(default=None, repr=False)

    def count(self, text: str) -> int:
        if text not in self._seen:
            if self._connection is None:
                self._connection = _Connection(server_root(self.base_url))
            count = _counted(self._connection.post, self.route, text)
            if count is None:
                raise ReaderFailed(f"{self.base_url}: the server stopped counting tokens")
            self._seen[text] = count
        return self._seen[text]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]


class _Connection:
    """One HTTP/1.1 connection to ``root``, opened again when the server closed it; JSON in
    and out, None on any failure (a new connection failing is not tried again). No proxy,
    as for every request here."""

    def __init__(self, root: str) -> None:
        parts = urllib.parse.urlsplit(root)
        https = parts.scheme == "https"
        self._open = partial(
            http.client.HTTPSConnection if https else http.client.HTTPConnection,
            parts.hostname or "127.0.0.1", parts.port, timeout=ASK_SECONDS,
        )  # fmt: skip
        self._prefix = parts.path.rstrip("/")
        self._http: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()  # pruning may count from more than one thread

    def post(self, route: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        with self._lock:
            while True:
                kept = self._http is not None
                self._http = self._http or self._open()
                try:
                    self._http.request("POST", self._prefix + route, data, _JSON)
                    response = self._http.getresponse()
                    read = response.read(1 << 20)
                except (OSError, http.client.HTTPException):
                    self._http.close()
                    self._http = None
                    if kept:  # the server closed it since: once more on a new one
                        continue
                    return None
                return _json(read) if response.status == 200 else None


def _json(data: bytes) -> Any:
    try:
        return loads(data)
    except ValueError:
        return None


_JSON = {"Content-Type": "application/json"}


def _counted(post: Callable[[str, dict[str, Any]], Any], route: str, text: str) -> int | None:
    """The token count of ``text`` by the server's ``route``, posted by ``post``."""
    if route == "/tokenize":
        answer = post(route, {"content": text, "add_special": False})
        tokens = answer.get("tokens") if isinstance(answer, dict) else None
        if isinstance(tokens, list):
            return len(tokens)
    else:
        answer = post(route, {"input": text})
        count = answer.get("count") if isinstance(answer, dict) else None
        if isinstance(count, int):
            return count
    return None


@lru_cache(maxsize=8)
def token_route(base_url: str) -> str | None:
    """The tokenize route the server at ``base_url`` answers, if any."""
    post = _Connection(server_root(base_url)).post
    for route in ("/tokenize", "/extras/tokenize/count"):
        if _counted(post, route, "probe") is not None:
            return route
    return None
