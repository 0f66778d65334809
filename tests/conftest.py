"""Shared fixtures: real pages from the corpus, and a tiny tokenizer and LM made on the spot
(``tests/tiny_models.py``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from tests.tiny_models import make_tiny_lm, make_tiny_tokenizer

# Markers for the slow tests, set from what each test reaches (tests/tiers.py).
pytest_plugins = ("tests.tiers",)

FIXTURES = Path(__file__).parent / "fixtures"
DEMO = Path(__file__).resolve().parent.parent / "demo"

# Tests never reach the network: a model id that is not a local path fails fast.
os.environ["HF_HUB_OFFLINE"] = "1"
# llama.cpp and torch share one OpenMP runtime, which reads this once, when the first of them
# loads: a test module that imports torch before a GGUF test runs would leave spinning waits
# that made SmolLM2's prefill 3x slower on a busy machine (reader/llama_cpp_chat.py sets it,
# too late).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# ...and ``--reader auto`` probes no port of the machine unless a test names one (a server
# another program runs there must not answer the tests' questions)...
os.environ["HTMLRAG_CHAT_PROBE_PORTS"] = ""
# ...and never touch the user's cache: commands without --cache use a throwaway file...
os.environ["HTMLRAG_CHAT_CACHE"] = str(Path(tempfile.mkdtemp()) / "cache.sqlite3")
# ...nor find a reader model the user keeps (``make reader-models``) under ``--reader auto``...
os.environ["HTMLRAG_CHAT_MODELS"] = tempfile.mkdtemp()
# ...nor hand a question to a service the user runs (``htmlrag-chat serve``)...
os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp()
# ...and see no terminal size from the environment: GNU readline, imported by pytest in the
# process that starts xdist's workers, writes the terminal's LINES and COLUMNS (80x24 without
# one) into the environment they inherit, so a table would be cut to 80 columns under `make
# test` and not in a serial run.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe of local servers waits for the tests' own servers however loaded the
    machine is: its 0.3 s deadline is for a port that hangs, and a scripted server on a
    machine at load 13 once took longer to answer. It still returns as soon as every port
    has answered or refused; the one test of the deadline names its own."""
    from htmlrag_chat.reader import discover

    monkeypatch.setattr(discover, "PROBE_SECONDS", 60.0)


@dataclass(frozen=True)
class FixturePage:
    name: str
    path: Path
    data: bytes
    with_snippets: list[str]
    without_snippets: list[str]
    question: str | None


def _load_pages() -> list[FixturePage]:
    pages = []
    for line in (FIXTURES / "pages.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        path = FIXTURES / item["file"]
        pages.append(
            FixturePage(
                name=path.stem,
                path=path,
                data=path.read_bytes(),
                with_snippets=item["with"],
                without_snippets=item["without"],
                question=item.get("question"),
            )
        )
    return pages


PAGES = _load_pages()


@pytest.fixture(params=PAGES, ids=[page.name for page in PAGES])
def fixture_page(request: pytest.FixtureRequest) -> FixturePage:
    return request.param


@pytest.fixture(scope="session")
def tiny_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 600-token byte-level BPE trained on the fixture pages, saved as a HF tokenizer."""
    texts = [page.data.decode("utf-8", "replace") for page in PAGES]
    return make_tiny_tokenizer(tmp_path_factory.mktemp("tiny-tokenizer"), texts)


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer_dir: Path) -> Path:
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-llama"), tiny_tokenizer_dir)


@pytest.fixture(scope="session")
def tiny_tied_lm_dir(tmp_path_factory: pytest.TempPathFactory, tiny_tokenizer_dir: Path) -> Path:
    """Another tiny Llama, its output layer tied to its embeddings (as Llama-3.2-1B's)."""
    return make_tiny_lm(tmp_path_factory.mktemp("tiny-tied-llama"), tiny_tokenizer_dir, tied=True)


@pytest.fixture(scope="session")
def max_pooled_minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled MiniLM with max pooling: a layout only sentence-transformers runs (so on
    the CPU too it loads through transformers, not numpy)."""
    from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, bundled_embedding

    bundled = bundled_embedding(DEFAULT_EMBED_MODEL)
    assert bundled is not None
    folder = tmp_path_factory.mktemp("max-pooled") / "minilm"
    shutil.copytree(bundled, folder, copy_function=os.symlink)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text(encoding="utf-8"))
    pooling.unlink()
    config.update(pooling_mode_mean_tokens=False, pooling_mode_max_tokens=True)
    pooling.write_text(json.dumps(config), encoding="utf-8")
    return folder


@pytest.fixture(scope="session")
def tiny_counter(tiny_tokenizer_dir: Path):
    from htmlrag_chat.pruning.tokens import load_token_counter

    loaded = load_token_counter(str(tiny_tokenizer_dir))
    assert loaded.notice is None
    return loaded.counter


def import_demo(folder: Path) -> Path:
    """A new cache in ``folder`` holding the bundled recording, imported by the real CLI."""
    path = folder / "recording.db"
    argv = ["--cache", str(path), "cache", "import", "--jsonl", str(DEMO / "recording.jsonl.gz")]
    assert main(argv) == 0
    return path


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection or name lookup this process tries fails the test: a local source
    answering with ``--no-web`` is seen to reach nothing."""

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("--no-web touched the network")

    monkeypatch.setattr(socket.socket, "connect", refused)
    monkeypatch.setattr(socket.socket, "connect_ex", refused)
    monkeypatch.setattr(socket, "getaddrinfo", refused)


def default_sigint() -> None:
    """``preexec_fn`` of a child the test sends Ctrl+C: SIGINT as a terminal leaves it. A
    suite started in the background (``make test &``) inherits SIGINT ignored from the
    shell, and a Python child that starts with it ignored keeps ignoring it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
