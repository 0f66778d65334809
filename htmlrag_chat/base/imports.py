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


def imported_names(path: Path, runtime: bool = False) -> list[str]:
    """Every module of the package that the file at ``path`` imports, in order, at any
    depth. A ``from htmlrag_chat.pruning import tokens`` imports the module
    ``htmlrag_chat.pruning.tokens``, at any depth of the package (``import_graph`` reduces
    a name that is no module, ``from htmlrag_chat.reader import Source``, to the module
    that defines it); relative imports are refused, since the project spells them out.
    ``runtime``: only the imports that run, not those for type checkers alone (under
    ``if TYPE_CHECKING:``), which cannot make a circle at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = _typing_only(tree) if runtime else set()
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
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


def _typing_only(tree: ast.AST) -> set[int]:
    """The import statements under ``if TYPE_CHECKING:`` (by node id)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _names_type_checking(node.test):
            for inner in node.body:
                found |= {id(child) for child in ast.walk(inner)}
    return found


def _names_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def import_graph(root: Path = ROOT, runtime: bool = False) -> dict[str, set[str]]:
    """Each module and the modules of the package it imports (names that are no module,
    like ``htmlrag_chat.__version__``, reduced to the module that defines them); with
    ``runtime``, only the imports that run (``imported_names``)."""
    files = module_files(root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        graph[module] = set()
        for name in imported_names(path, runtime):
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


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each set of modules that reach one another through
    their imports (Tarjan's strongly connected components of more than one module), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in graph:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)
