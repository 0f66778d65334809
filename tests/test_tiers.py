"""The test tiers (tests/tiers.py): a test is slow by what it reaches, followed through its
helpers and fixtures, and nothing else is; checked on a small suite pytest collects here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ROOT = TESTS.parent
TERMINAL = "test_a_terminal_shows_one_status_line_cleared_before_the_answer"

SUITE = """
import subprocess
from subprocess import run as run_a_program

import pytest
from hypothesis import given, strategies

from tests.smollm2 import llama_server, smollm2_gguf


def start_a_server():
    with llama_server(None):
        pass


def deeper():
    return start_a_server()


class Terminal:
    def open(self):
        import pty

        return pty.openpty


class Program:
    @property
    def program(self):
        return run_a_program


@pytest.fixture
def gguf():
    return smollm2_gguf()


@pytest.fixture
def through_another(gguf):
    return gguf


@pytest.fixture(scope="module")
def built_once():
    return []


@pytest.fixture
def on_one_built_once(built_once):
    return built_once


def test_plain():
    assert sum([1, 2]) == 3


def test_named_like_a_slow_thing_but_plain():
    smollm2 = llama = "names only"
    assert smollm2 == llama


def test_a_child_process():
    subprocess.run(["true"])


def test_a_name_imported_from_a_slow_module():
    run_a_program(["true"])


def test_a_helper_two_calls_down():
    def inner():
        deeper()

    inner()


def test_a_method_of_a_helper_class():
    Terminal().open()


def test_a_property_of_a_helper_class():
    assert Program().program


def test_a_fixture(gguf):
    pass


def test_a_fixture_of_a_fixture(through_another):
    pass


@given(strategies.integers())
def test_a_property(number):
    assert number == number


def test_a_module_fixture(built_once):
    pass


def test_a_module_fixture_through_another(on_one_built_once):
    pass


def test_a_module_fixture_and_smollm2(built_once, gguf):
    pass


@pytest.mark.slow
def test_said_by_hand():
    pass


@pytest.mark.eval
def test_a_kind_said_by_hand():
    pass
"""


# A plugin for the inner pytest: each collected test's tier markers and xdist groups, as JSON.
# The groups as a plugin registered after the conftests sees them in its own
# ``pytest_collection_modifyitems``: so xdist's worker reads them for ``--dist loadgroup``.
DUMP = """
import json
import os

TIERS = {"slow", "model", "subprocess", "pty", "fuzz", "snapshot", "tui", "eval"}
GROUPS = {}


class AsXdistsWorker:
    def pytest_collection_modifyitems(self, items):
        for item in items:
            names = {marker.args[0] for marker in item.iter_markers("xdist_group")}
            GROUPS[item.nodeid] = sorted(names)


def pytest_configure(config):
    config.pluginmanager.register(AsXdistsWorker())


def pytest_collection_finish(session):
    found = {
        item.nodeid: (
            sorted({marker.name for marker in item.iter_markers()} & TIERS),
            GROUPS[item.nodeid],
        )
        for item in session.items
    }
    with open(os.environ["TIERS_DUMP"], "w", encoding="utf-8") as out:
        json.dump(found, out)
"""

Tiers = dict[str, tuple[set[str], set[str]]]
# A child pytest that only collects runs no assert: rewriting them (pytest's assertion
# introspection, half of collecting this suite where no cached rewrite is written, as under
# PYTHONDONTWRITEBYTECODE) changes no import and no marker, so it is left out.
COLLECT_ONLY = ("--collect-only", "--assert=plain")


def collect(folder: Path, *args: str) -> Tiers:
    """Collect ``args`` in a child pytest run in ``folder`` (``--collect-only``, as ``make
    test-fast`` selects): each test's node id -> its tier markers and its xdist groups. A
    child process, not pytester's in-process run, so that plugins with session-wide state
    (the snapshot plugin's report folder) meet a session of their own."""
    (folder / "tiers_dump.py").write_text(DUMP, encoding="utf-8")
    dump = folder / "tiers.json"
    env = {
        **os.environ,
        "TIERS_DUMP": str(dump),
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(folder)]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)  # the child is a session of its own
    command = [sys.executable, "-m", "pytest", "-q", "-p", "tiers_dump"]
    command += ["-p", "no:cacheprovider", "-p", "no:xdist", *COLLECT_ONLY, *args]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(dump.read_text(encoding="utf-8"))
    return {nodeid: (set(kinds), set(groups)) for nodeid, (kinds, groups) in found.items()}


@pytest.fixture(scope="module")
def tiers(tmp_path_factory: pytest.TempPathFactory) -> Tiers:
    """Each test of ``SUITE`` (by name) -> its tier markers and its xdist groups."""
    folder = tmp_path_factory.mktemp("suite")
    (folder / "conftest.py").write_text('pytest_plugins = ("tests.tiers",)\n', encoding="utf-8")
    (folder / "test_suite.py").write_text(SUITE, encoding="utf-8")
    found = collect(folder, "test_suite.py")
    return {nodeid.rpartition("::")[2]: tier for nodeid, tier in found.items()}


def test_plain_tests_are_in_the_fast_tier(tiers) -> None:
    assert tiers["test_plain"] == (set(), set())
    assert tiers["test_named_like_a_slow_thing_but_plain"] == (set(), set())


def test_what_a_test_reaches_through_helpers_and_fixtures_makes_it_slow(tiers) -> None:
    smollm2 = ({"slow", "model", "subprocess"}, {"smollm2"})  # llama_server starts a process
    assert tiers["test_a_child_process"] == ({"slow", "subprocess"}, set())
    assert tiers["test_a_name_imported_from_a_slow_module"] == ({"slow", "subprocess"}, set())
    assert tiers["test_a_helper_two_calls_down"] == smollm2
    assert tiers["test_a_method_of_a_helper_class"] == ({"slow", "pty"}, set())
    assert tiers["test_a_property_of_a_helper_class"] == ({"slow", "subprocess"}, set())
    assert tiers["test_a_fixture"] == ({"slow", "model"}, {"smollm2"})
    assert tiers["test_a_fixture_of_a_fixture"] == ({"slow", "model"}, {"smollm2"})
    assert tiers["test_a_property"] == ({"slow", "fuzz"}, set())


def test_a_module_s_fixture_keeps_its_tests_on_one_worker(tiers) -> None:
    """So that one worker builds it once; a SmolLM2 test stays in the SmolLM2 group."""
    assert tiers["test_a_module_fixture"] == (set(), {"test_suite.py"})
    assert tiers["test_a_module_fixture_through_another"] == (set(), {"test_suite.py"})
    assert tiers["test_a_module_fixture_and_smollm2"] == ({"slow", "model"}, {"smollm2"})


def test_a_test_may_say_it_is_slow(tiers) -> None:
    assert tiers["test_said_by_hand"] == ({"slow"}, set())
    assert tiers["test_a_kind_said_by_hand"] == ({"slow", "eval"}, set())


def test_this_suite_s_slow_tests_are_marked(tmp_path: Path) -> None:
    """One file per kind of this suite, and a fast one, collected as ``make test-fast`` would."""
    expected = {
        "reader/test_llama_cpp_chat.py": "model",
        "mcp/test_stdio.py": "subprocess",
        f"commands/test_output.py::{TERMINAL}": "pty",
        "html/test_fuzz.py": "fuzz",
        "tui/test_snapshots.py::test_welcome": "snapshot",
        "tui/test_app.py::test_a_tiny_local_model_answers_in_the_app": "tui",
        # Beside the chat app's tests, but it never runs the app.
        "tui/test_app.py::test_without_a_terminal_the_bare_command_says_how_to_ask": None,
        "html/test_clean.py": None,
    }
    found = collect(tmp_path, *(str(TESTS / where) for where in expected))
    for where, kind in expected.items():
        file, _, name = where.partition("::")
        items = {
            nodeid: kinds
            for nodeid, (kinds, _) in found.items()
            if nodeid.startswith(f"tests/{file}::{name}")
        }
        assert items, where
        for nodeid, kinds in items.items():
            assert ({kind, "slow"} <= kinds) if kind else not kinds, (nodeid, kinds)


HIDE_TORCH = """
import importlib.abc
import sys

HIDDEN = ("torch", "transformers", "accelerate", "sentence_transformers")


class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hide())
"""


@pytest.mark.slow
def test_the_fast_tier_collects_without_torch(tmp_path: Path) -> None:
    """As on a core install (no torch, transformers or sentence-transformers, which a
    meta-path hook hides here): every test module collects, and the tests that need torch
    import it themselves, so they are marked ``torch`` and left out of the fast tier."""
    (tmp_path / "hide_torch.py").write_text(HIDE_TORCH, encoding="utf-8")
    env = os.environ | {"PYTHONPATH": os.pathsep.join((str(ROOT), str(tmp_path)))}
    argv = [sys.executable, "-m", "pytest", "-p", "hide_torch", "-p", "no:cacheprovider"]
    argv += [*COLLECT_ONLY, "-q", "-m", "not slow", str(TESTS)]
    collected = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    assert collected.returncode == 0, collected.stdout[-3000:]
    assert "error" not in collected.stdout.splitlines()[-1]
    torch_tests = "tests/reader/test_local.py::test_model_and_tokenizer_load_once_per_process"
    assert torch_tests not in collected.stdout  # marked torch, so slow
