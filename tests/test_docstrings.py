"""Every pointer a docstring of the package writes resolves: a ``path/module.py`` is a file
(beside the module, in the package, or in the checkout: ``tests/...``), and a dotted
``module.name`` whose first word is a module of the package (or a class of it) names
something that module (or class) defines. A module moved or a function renamed cannot leave
a docstring pointing at nothing, as docs/architecture.md cannot (tests/test_layers.py).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from htmlrag_chat.base.imports import ROOT, module_files
from htmlrag_chat.commands.options import REGISTRATIONS
from htmlrag_chat.settings.tree import BY_KEY

CHECKOUT = ROOT.parent
SPAN = re.compile(r"``([^`\s]+)``")
PATH = re.compile(r"^[\w./-]+\.py$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
FILE_ENDINGS = ("toml", "sqlite3", "json", "jsonl", "gz", "md", "txt", "db", "gguf", "yml")
assert REGISTRATIONS  # imported: the settings the registrations declare are keys too


def _names(tree: ast.AST) -> dict[str, set[str]]:
    """A module's top-level names, and each class's members (``Class`` -> its names)."""
    found: dict[str, set[str]] = defaultdict(set)
    body = getattr(tree, "body", [])
    for node in body:
        for name in _defined(node):
            found[""].add(name)
        if isinstance(node, ast.ClassDef):
            BASES[node.name] |= {base.id for base in node.bases if isinstance(base, ast.Name)}
            for member in node.body:
                found[node.name].update(_defined(member))
                if isinstance(member, ast.FunctionDef) and member.name == "__init__":
                    found[node.name].update(_self_attributes(member))
    return found


def _members(module: str, name: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """A class's members, those of its base classes (by name, anywhere) included."""
    members = set(NAMES[module].get(name, set()))
    for base in BASES[name] - seen - {name}:
        for where in CLASSES.get(base, ()):
            members |= _members(where, base, seen | {name})
    return members


def _defined(node: ast.AST) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.ImportFrom | ast.Import):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    if isinstance(node, ast.If | ast.Try):
        inner = [*node.body, *getattr(node, "orelse", []), *getattr(node, "handlers", [])]
        return set().union(*(_defined(child) for child in inner)) if inner else set()
    return set()


def _self_attributes(function: ast.FunctionDef) -> set[str]:
    return {
        node.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


BASES: dict[str, set[str]] = defaultdict(set)  # class name -> its bases' names
FILES = module_files()
TREES = {module: ast.parse(path.read_text(encoding="utf-8")) for module, path in FILES.items()}
NAMES = {module: _names(tree) for module, tree in TREES.items()}
# Each module (and package) of the package by every dotted tail of its name: ``registry``,
# ``reader.registry``; each class by its name.
BY_TAIL: dict[str, set[str]] = defaultdict(set)
for _module in FILES:
    _parts = _module.split(".")[1:]
    for _start in range(len(_parts)):
        BY_TAIL[".".join(_parts[_start:])].add(_module)
CLASSES: dict[str, set[str]] = defaultdict(set)
for _module, _names_of in NAMES.items():
    for _class in _names_of:
        if _class:
            CLASSES[_class].add(_module)


def resolves_path(pointer: str, module_path: Path) -> bool:
    bases = (module_path.parent, ROOT, CHECKOUT, *module_path.parents)
    return any((base / pointer).is_file() for base in bases)


def resolves_dotted(pointer: str) -> bool | None:
    """Whether ``pointer`` names something; None when its first word is no module or class
    of the package (``settings.reader``: an attribute of a variable, not checked)."""
    parts = pointer.split(".")
    if pointer in BY_KEY or parts[-1] in FILE_ENDINGS:
        return True  # a setting (``research.plan``) or a file (``config.toml``)
    checked = False
    for cut in range(len(parts), 0, -1):
        for module in BY_TAIL.get(".".join(parts[:cut]), ()):
            checked = True
            if _within(module, parts[cut:]):
                return True
    if parts[0] in CLASSES:
        checked = True
        if any(parts[1] in _members(module, parts[0]) for module in CLASSES[parts[0]]):
            return True
    return False if checked else None


def _within(module: str, rest: list[str]) -> bool:
    if not rest:
        return True
    names = NAMES[module]
    if rest[0] not in names[""]:
        return False
    if len(rest) == 1 or rest[0] not in names:  # a function's or a value's attribute
        return True
    return rest[1] in _members(module, rest[0])


def pointers() -> list[tuple[str, str]]:
    """(module, pointer) for every span of every docstring in the package."""
    found = []
    for module, tree in TREES.items():
        for node in ast.walk(tree):
            if not isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            ):
                continue
            doc = ast.get_docstring(node, clean=False)
            found += [(module, span) for span in SPAN.findall(doc or "")]
    return found


def test_every_pointer_in_a_docstring_resolves() -> None:
    broken = []
    for module, pointer in pointers():
        if PATH.match(pointer):
            if not resolves_path(pointer, FILES[module]):
                broken.append(f"{module}: {pointer}")
        elif DOTTED.match(pointer) and resolves_dotted(pointer) is False:
            broken.append(f"{module}: {pointer}")
    assert broken == []


@pytest.mark.parametrize(
    ("pointer", "resolves"),
    [
        ("registry.look_around", True),
        ("reader.registry.BACKENDS", True),
        ("Backend.look", True),
        ("base.hub.unobtainable", False),  # moved to modelio/
        ("registry.no_such_function", False),
        ("Store.add_answer", True),  # a method of one of its bases
        ("research.plan", True),  # a setting
        ("ReaderSettings.nothing", False),
        ("around.here", None),  # a variable's attribute: not a pointer
    ],
)
def test_the_resolver_tells_a_pointer_from_a_broken_one(pointer: str, resolves: bool) -> None:
    assert resolves_dotted(pointer) is resolves


def test_a_path_resolves_beside_its_module_or_from_the_root() -> None:
    registry = FILES["htmlrag_chat.reader.registry"]
    assert resolves_path("backend.py", registry) and resolves_path("reader/backend.py", registry)
    assert resolves_path("tests/test_layers.py", registry)
    assert not resolves_path("reader/gguf.py", registry)
