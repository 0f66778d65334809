"""The benchmarks are not run by the suite (they write the figures the README quotes), but
every name they import from the package must still exist: a rename in a merge once left
``bench/lexical.py`` importing what had moved."""

from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def package_imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("htmlrag_chat")
        for alias in node.names
    ]


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda path: path.name)
def test_every_name_a_benchmark_imports_exists(path: Path) -> None:
    missing = []
    for module, name in package_imports(path):
        found = importlib.import_module(module)
        if not hasattr(found, name) and importlib.util.find_spec(f"{module}.{name}") is None:
            missing.append(f"{module}.{name}")
    assert missing == []
