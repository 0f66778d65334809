"""The package's own import graph, read from its source files rather than by importing them.

Two things need to know which module uses which, without running any of them: the layer
contracts (``tests/test_layers.py``: a lower layer never imports a higher one) and the
evaluation, whose cached results are keyed by the source of every module that made them
(``eval/code.py``). Every import statement counts, at any depth of the file: an import
inside a function (kept there so that torch loads only when used) is a dependency all the
same, and a cycle cannot hide behind one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

PACKAGE = "htmlrag_chat"
ROOT = Path(__file__).parents[1]  # the package, this module being in base/


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root`` by dotted name (a package by its
    ``__init__``'s name: ``htmlrag_chat.reader``)."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join((PACKAGE, *parts))] = path
    return files


def imported_names(path: Path) -> list[str]:
    """Every module of the package that the file at ``path`` imports, in order, at any
    depth. A ``from htmlrag_chat.pruning import tokens`` imports the module
    ``htmlrag_chat.pruning.tokens``, at any depth of the package (``import_graph`` reduces
    a name that is no module, ``from htmlrag_chat.reader import Source``, to the module
    that defines it); relative imports are refused, since the project spells them out."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise ValueError(f"{path}: relative import; the project spells imports out")
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found += [name for name in names if name.split(".")[0] == PACKAGE]
    return found


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Each module and the modules of the package it imports (names that are no module,
    like ``htmlrag_chat.__version__``, reduced to the module that defines them)."""
    files = module_files(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        graph[module] = set()
        for name in imported_names(path):
            while name not in files and "." in name:
                name = name.rpartition(".")[0]
            if name != module:
                graph[module].add(name)
    return graph


def closure(roots: Iterable[str], graph: dict[str, set[str]]) -> set[str]:
    """``roots`` and every module they import, directly or through others; importing a
    submodule runs its package's ``__init__`` too, so the packages come along."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or module not in graph:
            continue
        seen.add(module)
        todo += graph[module]
        todo += [p for p in _parents(module) if p in graph]
    return seen


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]
