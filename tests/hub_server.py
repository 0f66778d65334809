"""A Hugging Face hub on loopback: the edge of the world for ``models pull`` tests.

It answers the requests ``huggingface_hub`` makes for ``model_info`` and
``snapshot_download`` (the repo's info, the file tree, a HEAD and a GET per file) from a
dict of repos, and answers a gated repo's files the way the hub does (403 with
``X-Error-Code: GatedRepo``), so the real client runs against it; nothing leaves the
machine. It runs on its own loop in a thread, since the CLI and the hub client block.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from aiohttp import web

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class Hub:
    repos: dict[str, dict[str, bytes]]  # repo id -> file name -> content
    gated: set[str] = field(default_factory=set)
    requests: list[str] = field(default_factory=list)  # "METHOD /path"

    def downloaded(self, repo_id: str) -> list[str]:
        """The files of ``repo_id`` whose content was sent."""
        prefix = f"GET /{repo_id}/resolve/{COMMIT}/"
        return sorted(r.removeprefix(prefix) for r in self.requests if r.startswith(prefix))


@contextmanager
def serve_hub(hub: Hub) -> Iterator[str]:
    """Run ``hub`` on 127.0.0.1 at a free port; yields its endpoint (for HF_ENDPOINT)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def handle(request: web.Request) -> web.StreamResponse:
        return await _answer(hub, request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    asyncio.run_coroutine_threadsafe(runner.setup(), loop).result(5)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    asyncio.run_coroutine_threadsafe(site.start(), loop).result(5)
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


async def _answer(hub: Hub, request: web.Request) -> web.StreamResponse:
    hub.requests.append(f"{request.method} {request.path}")
    path = request.path
    for repo_id, files in hub.repos.items():
        if path in (f"/api/models/{repo_id}", f"/api/models/{repo_id}/revision/main"):
            siblings = [{"rfilename": name} for name in files]
            return web.json_response({"id": repo_id, "sha": COMMIT, "siblings": siblings})
        if path == f"/api/models/{repo_id}/tree/{COMMIT}":
            tree = [
                {"type": "file", "path": name, "size": len(data), "oid": _oid(data)}
                for name, data in files.items()
            ]
            return web.json_response(tree)
        # The client asks by commit (snapshot_download) or by branch (hf_hub_download).
        prefix = next(
            (f"/{repo_id}/resolve/{rev}/" for rev in (COMMIT, "main")
             if path.startswith(f"/{repo_id}/resolve/{rev}/")),
            "",
        )  # fmt: skip
        if prefix and path.removeprefix(prefix) in files:
            if repo_id in hub.gated:
                message = f"Access to model {repo_id} is restricted. You must have access to it."
                headers = {"X-Error-Code": "GatedRepo", "X-Error-Message": message}
                return web.Response(status=403, headers=headers, text=message)
            data = files[path.removeprefix(prefix)]
            headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{_oid(data)}"'}
            if request.method == "HEAD":
                return web.Response(headers=headers | {"Content-Length": str(len(data))})
            return web.Response(body=data, headers=headers)
    headers = {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"}
    return web.Response(status=404, headers=headers, text="Repository not found")


def _oid(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()
