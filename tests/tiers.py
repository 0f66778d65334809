"""Test tiers: which tests are slow, found from what they reach, never listed by hand.

A test is slow when its own code, the helpers it calls in ``tests/`` (followed through
their code, however deep) or the fixtures it uses reach one of the things in ``REACHES``
(SmolLM2, transformers loading a model, a child process, a pseudo-terminal), or when it is
a hypothesis test or a Textual snapshot. It then gets the marker of that kind and ``slow``;
``make test-fast`` runs ``-m "not slow"``. So a new test that starts ``llama_server`` or
takes ``tiny_lm_dir`` lands in the slow tier without anyone marking it, and a new kind of
slow thing is one line here. A test whose slowness nothing here can see (a 5 MiB page, an
evaluation run through the CLI) says ``@pytest.mark.slow`` or its kind itself.

Tests that run SmolLM2 share the ``smollm2`` xdist group: ``--dist loadgroup`` keeps them on
one worker, so two llama.cpp instances, each asking for every core, never run at once. Any
other test that takes a fixture built once per module or class (a wheel installed in a venv,
a child pytest's collection, a recording) joins its module's group, so that one worker builds
that fixture once: handed out test by test, such tests went to both workers, each building
it, and again each time another module's test came between.
"""

from __future__ import annotations

import dis
import inspect
import sys
import types
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

# Marker -> what it means (``pytest --markers`` shows these).
KINDS = {
    "model": "runs a real model: SmolLM2 through llama.cpp, or transformers loading one",
    "subprocess": "starts a child process (the CLI, an MCP server, llama_cpp.server)",
    "pty": "drives a command in a pseudo-terminal",
    "fuzz": "a hypothesis property test (hundreds of generated cases)",
    "snapshot": "renders a Textual screen and compares it with its SVG",
    "tui": "runs the chat app under Textual's Pilot",
    "eval": "runs the evaluation: every method on every item of a dataset",
    "torch": "imports torch (the transformers or gpu extra), which a core install lacks",
}
SLOW = "slow: in no fast tier (`make test-fast` skips it); set by tests/tiers.py"

# Where a slow thing starts ("module:attribute", or a module), the kind it makes a test.
REACHES = {
    "tests.smollm2:smollm2_gguf": "model",
    "tests.smollm2:llama_server": "model",
    "tests.tiny_models:make_tiny_lm": "model",
    "subprocess": "subprocess",
    "mcp.client.stdio:stdio_client": "subprocess",
    "pty": "pty",
    "htmlrag_chat.tui.app:ChatApp": "tui",
    "htmlrag_chat.eval.runner:evaluate": "eval",
    # Imported inside the tests that need them, so that the fast tier collects on a core
    # install without torch (tests/test_tiers.py checks it).
    "torch": "torch",
    "htmlrag_chat.reader.local": "torch",
    "htmlrag_chat.scoring.generative": "torch",
}
# Fixtures from plugins, whose code is not in tests/.
FIXTURES = {"snap_compare": "snapshot"}
# Kinds -> the xdist group their tests share (one worker runs them one after another).
GROUPS = {"smollm2": ("tests.smollm2:smollm2_gguf", "tests.smollm2:llama_server")}
# Fixture scopes built once for several tests of one module: their tests share its group.
SHARED_SCOPES = ("module", "class")


def _if_imported(where: str) -> object | None:
    """What ``where`` names, if its module is imported by now (the collected test modules and
    their helpers are), else None: no code of the suite can hold an object of a module not
    yet imported, and an import inside a test is read by its name (``REACHES`` modules),
    so nothing is imported here (torch and transformers took seconds of each child pytest's
    collection, and a module of a missing extra cannot be imported at all)."""
    module, _, attribute = where.partition(":")
    loaded = sys.modules.get(module)
    if loaded is None:
        return None
    return getattr(loaded, attribute) if attribute else loaded


class Reach:
    """What tests reach among the ``REACHES`` entries, following the code of the test
    suite (the ``tests`` package and the collected test modules) into its helpers."""

    def __init__(self, reaches: dict[str, str], suite: Iterable[str] = ()) -> None:
        imported = {where: _if_imported(where) for where in reaches}
        loaded = {where: found for where, found in imported.items() if found is not None}
        self.targets = {id(obj): (where, obj) for where, obj in loaded.items()}
        # A module reached through a name imported from it (``from subprocess import run``).
        self.modules = {where for where in reaches if ":" not in where}
        self.kinds = reaches
        self.suite = set(suite)
        self.direct: dict[int, tuple[set[str], list[object]]] = {}

    def of(self, *functions: object) -> set[str]:
        """The ``REACHES`` keys that ``functions`` reach, directly or through the suite's
        helpers, however deep (each function read once, cycles included)."""
        reached: set[str] = set()
        seen: set[int] = set()
        todo = list(functions)
        while todo:
            function = todo.pop()
            if id(function) in seen:
                continue
            seen.add(id(function))
            targets, helpers = self._direct(function)
            reached |= targets
            todo.extend(helpers)
        return reached

    def in_suite(self, found: object) -> bool:
        module = getattr(found, "__module__", None) or ""
        return module == "tests" or module.startswith("tests.") or module in self.suite

    def _direct(self, function: object) -> tuple[set[str], list[object]]:
        """The targets ``function``'s own code names, and the suite's functions it names."""
        key = id(function)
        if key not in self.direct:
            targets: set[str] = set()
            helpers: list[object] = []
            unwrapped = inspect.unwrap(function) if callable(function) else function
            code = getattr(unwrapped, "__code__", None)
            namespace: dict[str, Any] = getattr(unwrapped, "__globals__", {})
            codes = list(_codes(code)) if isinstance(code, types.CodeType) else []
            names = {name for each in codes for name in each.co_names}
            if names & self.modules:  # an import statement names one (read only then: slow)
                targets |= set(_imported(codes)) & self.modules
            for name in names:
                found = namespace.get(name)
                target = self.targets.get(id(found))
                if found is None:
                    continue
                if target is not None and target[1] is found:
                    targets.add(target[0])
                elif getattr(found, "__module__", None) in self.modules and callable(found):
                    targets.add(found.__module__)
                if self.in_suite(found):
                    helpers.extend(_functions(found))
            self.direct[key] = (targets, helpers)
        return self.direct[key]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code of the functions defined inside it."""
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _codes(constant)


def _imported(codes: list[types.CodeType]) -> Iterator[str]:
    """The modules that ``import`` statements inside these functions name."""
    for code in codes:
        for instruction in dis.get_instructions(code):
            if instruction.opname == "IMPORT_NAME":
                yield instruction.argval


def _functions(found: object) -> list[object]:
    """A helper to follow, or the methods (and properties) of a helper class."""
    if not inspect.isclass(found):
        return [found] if callable(found) else []
    members = [getattr(m, "__func__", getattr(m, "fget", m)) for m in vars(found).values()]
    return [member for member in members if callable(member)]


def _fixture_functions(item: pytest.Item) -> Iterator[tuple[str, object]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for name, definitions in info.name2fixturedefs.items():
        if definitions:
            yield name, definitions[-1].func


def tiers(item: pytest.Item, reach: Reach) -> tuple[set[str], set[str]]:
    """The kinds of ``item`` and the xdist groups it belongs to."""
    test = getattr(item, "obj", None)
    kinds = {"fuzz"} if getattr(test, "is_hypothesis_test", False) else set()
    followed = [test]
    for name, function in _fixture_functions(item):
        if name in FIXTURES:
            kinds.add(FIXTURES[name])
        if reach.in_suite(function):
            followed.append(function)
    reached = reach.of(*followed)
    kinds |= {reach.kinds[where] for where in reached}
    groups = {group for group, starts in GROUPS.items() if reached.intersection(starts)}
    if not groups and any(scope in SHARED_SCOPES for scope in _fixture_scopes(item)):
        groups = {item.nodeid.partition("::")[0]}  # its module's (one group a test: xdist
        # would join two names into a third group)
    return kinds, groups


def _fixture_scopes(item: pytest.Item) -> Iterator[str]:
    """The scopes of the fixtures ``item`` takes, directly or through other fixtures."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for definitions in info.name2fixturedefs.values():
        if definitions:
            yield definitions[-1].scope


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", SLOW)
    if not config.pluginmanager.hasplugin("xdist"):  # run with -p no:xdist: still declared
        config.addinivalue_line("markers", "xdist_group(name): tests one xdist worker runs")
    for kind, meaning in KINDS.items():
        config.addinivalue_line("markers", f"{kind}: {meaning} (slow; set by tests/tiers.py)")


# First: xdist's worker reads the groups from the markers in its own hook of this name, and,
# registered after the conftests, it would otherwise run before this one and find none (on
# main at 06467ff no group reached the scheduler: SmolLM2 tests ran on both workers at once).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    reach = Reach(REACHES, {item.module.__name__ for item in items if hasattr(item, "module")})
    for item in items:
        kinds, groups = tiers(item, reach)
        for kind in sorted(kinds):
            item.add_marker(kind)
        if kinds or any(item.get_closest_marker(kind) for kind in KINDS):
            item.add_marker("slow")
        for group in sorted(groups):
            item.add_marker(pytest.mark.xdist_group(group))
