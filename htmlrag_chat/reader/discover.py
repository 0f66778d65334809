"""Local LLM servers found for the user: Ollama, LM Studio, llama.cpp's server and vLLM.

Most people who run Llama on a laptop run it in one of these four, each on its default
port and each listing its models at the OpenAI-compatible ``GET /v1/models``. ``--reader
auto`` asks those ports for their models and takes the best chat model it finds, so a user
with Ollama running gets LLM answers without knowing about ``--base-url``.

The probe only ever connects to 127.0.0.1 (the host is a constant, never a setting), with
no proxy, and asks every port at once under one short deadline: a port where nothing
listens refuses in microseconds, and a port that hangs costs at most ``PROBE_SECONDS``.
"""

from __future__ import annotations

import http.client
import ipaddress
import re
import socket
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from urllib.parse import urlsplit

from htmlrag_chat.base.ports import DEFAULT_PORTS, SERVERS
from htmlrag_chat.base.received import loads
from htmlrag_chat.base.safety import one_line

LOOPBACK = "127.0.0.1"
PROBE_SECONDS = 0.3  # all ports together: asked at once, unanswered ones are left out
LIST_SECONDS = 3.0  # a configured server's model list (it may be remote)
CONNECT_SECONDS = 3.0  # a configured server accepting a connection
_MAX_LISTING_BYTES = 1 << 20
# What the listing's ``owned_by`` says about the server, where the port does not.
_OWNERS = {"vllm": "vLLM", "llamacpp": "llama.cpp"}

# Servers list embedding and reranking models beside chat ones (Ollama's nomic-embed-text,
# LM Studio's text-embedding-*); a reader must never be one of them.
_NOT_CHAT = re.compile(r"embed|rerank|bge|minilm|\be5\b|e5-|whisper|tts", re.IGNORECASE)
_LLAMA3 = re.compile(r"llama[-_ .]?3", re.IGNORECASE)  # llama3.1:8b, Llama-3.1-8B-Instruct
_INSTRUCT = re.compile(r"instruct|chat|-it\b", re.IGNORECASE)


@dataclass(frozen=True)
class Server:
    """An OpenAI-compatible server and the models it lists."""

    name: str  # "Ollama", or "server" for an unknown one
    base_url: str  # ends in /v1
    models: tuple[str, ...]

    @property
    def address(self) -> str:
        return urlsplit(self.base_url).netloc

    def describe(self) -> str:
        if self.name == "server":
            return f"the server at {self.address}"
        return f"{self.name} at {self.address}"


@dataclass(frozen=True)
class ServerChoice:
    """The server and model that will answer, and why (``configured`` or found)."""

    server: Server
    model: str
    configured: bool

    def line(self) -> str:
        """The one line that says who answers."""
        how = "configured" if self.configured else "found on this machine"
        return f"reader: {one_line(self.model)} on {self.server.describe()} ({how})"


def probe_urls(ports: Sequence[int]) -> list[str]:
    """The base URLs a probe of ``ports`` asks: 127.0.0.1 only, whatever the ports."""
    return [f"http://{LOOPBACK}:{int(port)}/v1" for port in ports]


def find_servers(ports: Sequence[int] | None = None, timeout: float | None = None) -> list[Server]:
    """The servers answering on ``ports`` of 127.0.0.1 (None: ``DEFAULT_PORTS``), in the
    order of ``ports``, found within ``timeout`` seconds in all (None: ``PROBE_SECONDS``,
    read at the call; a port still answering then is left out). It returns as soon as
    every port has answered or refused."""
    timeout = PROBE_SECONDS if timeout is None else timeout
    urls = probe_urls(DEFAULT_PORTS if ports is None else ports)
    if not urls:
        return []
    pool = ThreadPoolExecutor(max_workers=len(urls), thread_name_prefix="probe")
    futures = [pool.submit(_server_at, url, None, timeout) for url in urls]
    done, _ = wait(futures, timeout=timeout)
    pool.shutdown(wait=False, cancel_futures=True)  # stragglers end at their socket timeout
    return [server for f in futures if f in done and (server := f.result()) is not None]


def list_models(
    base_url: str, api_key: str | None = None, timeout: float = LIST_SECONDS
) -> Server | None:
    """The configured server and its models, or None when it does not list them."""
    return _server_at(base_url.rstrip("/"), api_key, timeout)


def best_model(models: Sequence[str], wanted: str | None = None) -> str | None:
    """The model to read with: ``wanted`` when the server lists it (Ollama's ``:latest``
    may be left off), else the best chat model, else None.

    The rule: embedding and reranking models never; then Llama 3 first (the method's
    reader), instruction-tuned first (``instruct``, ``chat``, ``-it`` in the name), and on
    a tie the server's own order.
    """
    if wanted:
        return next((m for m in models if wanted in (m, m.removesuffix(":latest"))), None)
    return max(chat_models(models), key=_rank, default=None)


def chat_models(models: Sequence[str]) -> list[str]:
    """The models that can read: all but the embedding and reranking ones."""
    return [model for model in models if not _NOT_CHAT.search(model)]


def choose_server(servers: Sequence[Server], wanted: str | None = None) -> ServerChoice | None:
    """The found server and model that should answer: the best-ranked model across servers,
    the earlier server on a tie (the order of ``DEFAULT_PORTS``: Ollama first)."""
    best: ServerChoice | None = None
    for server in servers:
        model = best_model(server.models, wanted)
        if model is not None and (best is None or _rank(model) > _rank(best.model)):
            best = ServerChoice(server, model, configured=False)
    return best


def server_name(base_url: str) -> str:
    """What to call the server at ``base_url``: the known server on its loopback port,
    else its address."""
    return _known_name(base_url) or urlsplit(base_url).netloc or base_url


def _known_name(base_url: str) -> str | None:
    parts = urlsplit(base_url)
    return SERVERS.get(parts.port or 0) if _is_loopback(parts.hostname) else None


def _rank(model: str) -> tuple[bool, bool]:
    return bool(_LLAMA3.search(model)), bool(_INSTRUCT.search(model))


def _server_at(base_url: str, api_key: str | None, timeout: float) -> Server | None:
    """``GET {base_url}/models``, or None when nothing there lists models."""
    parts = urlsplit(base_url)
    request = urllib.request.Request(f"{base_url}/models", headers={"Accept": "application/json"})
    if api_key:
        request.add_header("Authorization", f"Bearer {api_key}")
    # Loopback never goes through a proxy (an http_proxy setting would swallow the probe).
    handlers = [urllib.request.ProxyHandler({})] if _is_loopback(parts.hostname) else []
    try:
        with urllib.request.build_opener(*handlers).open(request, timeout=timeout) as response:
            listing = loads(response.read(_MAX_LISTING_BYTES))
    except (OSError, ValueError, http.client.HTTPException):
        return None  # refused, timed out, an HTTP error, or not JSON: no server of ours
    if not isinstance(listing, dict) or not isinstance(listing.get("data"), list):
        return None
    entries = [e for e in listing["data"] if isinstance(e, dict) and isinstance(e.get("id"), str)]
    owners = [e.get("owned_by") for e in entries]
    owner = next((_OWNERS[o] for o in owners if isinstance(o, str) and o in _OWNERS), None)
    name = owner or _known_name(base_url) or "server"
    return Server(name, base_url, tuple(e["id"] for e in entries))


def unreachable(base_url: str, timeout: float = CONNECT_SECONDS) -> str | None:
    """Why nothing accepts a connection at ``base_url``'s host and port (refused, no such
    host, timed out), or None when something does. Asked before any search or pruning, so
    a configured server that is down is said at once, not after the work it would end.
    Behind a proxy the proxy decides, so that case is left to the first request."""
    parts = urlsplit(base_url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    proxied = parts.scheme in urllib.request.getproxies() and not urllib.request.proxy_bypass(host)
    if proxied and not _is_loopback(host):
        return None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        return one_line(error.strerror or str(error) or type(error).__name__)
    return None


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def configured_server(base_url: str) -> Server:
    """The configured server when it does not list its models: named by its port."""
    return Server(_known_name(base_url) or "server", base_url.rstrip("/"), ())
