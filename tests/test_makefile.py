"""The Makefile as a newcomer meets it: `make test` on a fresh clone took 34 minutes, 23 of
them silent (pip compiling llama.cpp under -q). Each install says first what it is, why, and
how long it usually takes; `make reader-models` needs only the core install."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = re.compile(r"\bpip\b.*\binstall\b|\$\(PIP\) install")
SAID = re.compile(r'^\t@echo "make: .*\b(\d+(-\d+)? minutes?|seconds|\d+ minute)\b')


def recipes() -> dict[str, list[str]]:
    """Each target's recipe lines (continuation lines joined), by target."""
    found: dict[str, list[str]] = {}
    target = None
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        if line.startswith("\t") and target is not None:
            found[target].append(line)
        elif (rule := re.match(r"^([^\s:#=][^:=]*):(?!=)", line)) is not None:
            target = rule.group(1).strip()
            found[target] = []
        elif not line.startswith("\t"):
            target = None if line.strip() and not line.startswith("#") else target
    return found


def test_every_install_step_is_announced_with_what_and_how_long() -> None:
    steps = 0
    for target, lines in recipes().items():
        for before, line in zip(["", *lines], lines, strict=False):
            if INSTALL.search(line) and "2>/dev/null ||" not in before:
                steps += 1
                assert SAID.search(before), f"{target}: no line before\n{line.strip()}"
    assert steps >= 4  # the core, the embedding wheel, torch, the test extras, SmolLM2


def test_the_llama_cpp_compile_is_announced_with_its_time() -> None:
    lines = recipes()["$(STAMP)"]
    [said] = [line for line in lines if "llama" in line and "echo" in line]
    assert "compiles llama.cpp" in said and "10-40 minutes" in said


def test_reader_models_needs_only_the_core_install() -> None:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^reader-models: \$\(CORE_STAMP\)$", text, re.M)
