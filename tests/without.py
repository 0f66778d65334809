"""The command line in a subprocess where some packages cannot be imported, as in an install
that lacks them (``pip install '.[gguf]'``: no torch, transformers or sentence-transformers).

Each package is set to None in ``sys.modules`` before the program starts: ``import torch``
then raises ``ModuleNotFoundError`` and ``importlib.util.find_spec("torch")`` answers None,
as for a package that is not installed, whatever this environment holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TORCH = ("torch", "transformers", "sentence_transformers")  # what the gguf extra leaves out
_RUN = """
import runpy, sys
blocked, sys.argv = sys.argv[1].split(","), ["htmlrag-chat", *sys.argv[2:]]
sys.modules.update(dict.fromkeys(blocked))
try:
    runpy.run_module("htmlrag_chat", run_name="__main__", alter_sys=True)
finally:
    loaded = sorted(name for name in blocked if sys.modules.get(name) is not None)
    assert not loaded, f"imported although not installed: {loaded}"
"""


def run_without(
    packages: Sequence[str], argv: Sequence[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``htmlrag-chat *argv`` with ``packages`` uninstallable, from the checkout."""
    environment = os.environ | {"PYTHONPATH": str(ROOT)} | (env or {})
    return subprocess.run(
        [sys.executable, "-c", _RUN, ",".join(packages), *argv],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
        cwd=ROOT,
    )
