"""A PyPI-style package index on loopback (PEP 503's simple API), serving wheels rebuilt
from distributions installed in this environment: an installer run by a test gets the real
package's files over a real socket, and nothing leaves the machine."""

from __future__ import annotations

import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

from aiohttp import web

# Files pip writes at install time, which no wheel carries.
_INSTALLED_ONLY = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD")


def rebuild_wheel(name: str, folder: Path) -> Path:
    """The wheel of installed distribution ``name``, rebuilt from its files (RECORD), in
    ``folder``."""
    dist = metadata.distribution(name)
    tag = next(line.split(": ")[1] for line in dist.read_text("WHEEL").splitlines()
               if line.startswith("Tag: "))  # fmt: skip
    stem = f"{dist.metadata['Name'].replace('-', '_')}-{dist.version}"
    wheel = folder / f"{stem}-{tag}.whl"
    records = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files or []:
            parts = file.parts
            if parts[0] == ".." or "__pycache__" in parts or parts[-1] in _INSTALLED_ONLY:
                continue
            data = Path(str(dist.locate_file(file))).read_bytes()
            archive.writestr(file.as_posix(), data)
            records.append(f"{file.as_posix()},,")
        archive.writestr(f"{stem}.dist-info/RECORD", "\n".join(records) + "\n")
    return wheel


def index_app(wheels: list[Path], hits: list[str]) -> web.Application:
    """``/simple/<project>/`` lists each wheel with its sha256; ``/files/<wheel>`` serves
    it; every request path is appended to ``hits``."""

    def project(wheel: Path) -> str:
        return wheel.name.split("-")[0].replace("_", "-").lower()

    async def simple(request: web.Request) -> web.Response:
        hits.append(request.path)
        name = request.match_info["project"].lower()
        links = [
            f'<a href="/files/{w.name}#sha256={hashlib.sha256(w.read_bytes()).hexdigest()}">'
            f"{w.name}</a>"
            for w in wheels
            if project(w) == name
        ]
        if not links:
            raise web.HTTPNotFound()
        return web.Response(text="<html><body>" + "".join(links) + "</body></html>",
                            content_type="text/html")  # fmt: skip

    async def files(request: web.Request) -> web.FileResponse:
        hits.append(request.path)
        found = [w for w in wheels if w.name == request.match_info["wheel"]]
        if not found:
            raise web.HTTPNotFound()
        return web.FileResponse(found[0])

    app = web.Application()
    app.router.add_get("/simple/{project}/", simple)
    app.router.add_get("/files/{wheel}", files)
    return app
