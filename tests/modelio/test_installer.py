"""Install hints name the checkout as a path, never as a bare name an index would look up:
from the folder above a checkout named ``clone`` (or ``requests``, a project on PyPI), pasting
``pipx install --force 'clone[pdf]'`` installed the PyPI project ``clone``."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement

from htmlrag_chat.modelio.installer import CHECKOUT, Installer, source_path


def checkout(parent: Path, name: str) -> Path:
    """A folder pip can install: a project named ``htmlrag-chat`` with a ``pdf`` extra."""
    folder = parent / name
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "htmlrag-chat"\nversion = "0.1.0"\n'
        "[project.optional-dependencies]\npdf = []\n[tool.setuptools]\npackages = []\n",
        encoding="utf-8",
    )
    return folder


def spec_of(command: str) -> str:
    """The word of an install command that names what to install, as the shell passes it."""
    word = next(word for word in shlex.split(command) if word.endswith("[pdf]"))
    return os.path.expanduser(word) if command.count("~/") else word


@pytest.mark.parametrize("name", ["clone", "requests", "htmlrag-chat"])
@pytest.mark.parametrize("here", ["parent", "sibling", "home"])
def test_every_installer_is_given_the_checkout_as_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, here: str
) -> None:
    """From the folder above it, a sibling folder, or with the checkout under HOME: pip,
    pipx and uv each get a word that no PEP 508 parser reads as a project name (what an
    index would be asked for), and it names the checkout."""
    folder = checkout(tmp_path, name)
    monkeypatch.setenv("HOME", str(tmp_path if here == "home" else tmp_path / "else"))
    cwd = tmp_path if here == "parent" else tmp_path / "other"
    cwd.mkdir(exist_ok=True)
    monkeypatch.chdir(cwd)
    source = source_path(folder)
    for installer in ("pip", "pipx", "uv"):
        command = Installer(installer, tmp_path / "env", source).extra("pdf")
        spec = spec_of(command)
        with pytest.raises(InvalidRequirement):
            Requirement(spec)  # a name[extra] would parse: a lookup on the index
        assert (cwd / spec.removesuffix("[pdf]")).resolve() == folder.resolve(), command
    assert source == {"parent": f"./{name}", "sibling": str(folder), "home": f"~/{name}"}[here]


def test_the_placeholder_for_an_unknown_source_is_a_path_too() -> None:
    with pytest.raises(InvalidRequirement):
        Requirement(f"{CHECKOUT}[pdf]")


def test_pip_installs_the_hint_from_the_checkout_without_asking_an_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint pasted into real pip, from the folder above a checkout named like a PyPI
    project, with no index at all: pip reads the checkout (a bare ``requests[pdf]`` fails
    here with "No matching distribution")."""
    folder = checkout(tmp_path, "requests")
    monkeypatch.chdir(tmp_path)
    command = Installer("pip", Path(sys.prefix), source_path(folder)).extra("pdf")
    words = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps"]
    words += ["--no-build-isolation", "--disable-pip-version-check", spec_of(command)]
    done = subprocess.run(words, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Would install htmlrag-chat-0.1.0" in done.stdout
