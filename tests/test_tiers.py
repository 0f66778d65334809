"""The test tiers (tests/tiers.py): a test is slow by what it reaches, followed through its
helpers and fixtures, and nothing else is; checked on a small suite pytest collects here."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent

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

    @property
    def program(self):
        return run_a_program


@pytest.fixture
def gguf():
    return smollm2_gguf()


@pytest.fixture
def through_another(gguf):
    return gguf


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
    assert Terminal().program


def test_a_fixture(gguf):
    pass


def test_a_fixture_of_a_fixture(through_another):
    pass


@given(strategies.integers())
def test_a_property(number):
    assert number == number


@pytest.mark.slow
def test_said_by_hand():
    pass


@pytest.mark.eval
def test_a_kind_said_by_hand():
    pass
"""


@pytest.fixture
def tiers(pytester: pytest.Pytester) -> dict[str, tuple[set[str], set[str]]]:
    """Each test of ``SUITE`` -> its tier markers and its xdist groups."""
    pytester.makeconftest('pytest_plugins = ("tests.tiers",)')
    pytester.makepyfile(test_suite=SUITE)
    items, recorder = pytester.inline_genitems("-p", "no:cacheprovider")
    recorder.assertoutcome()  # collected without an error
    tier_markers = {"slow", "model", "subprocess", "pty", "fuzz", "snapshot", "tui", "eval"}
    found = {}
    for item in items:
        names = {marker.name for marker in item.iter_markers()}
        groups = {m.args[0] for m in item.iter_markers("xdist_group")}
        found[item.name] = (names & tier_markers, groups)
    return found


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


def test_a_test_may_say_it_is_slow(tiers) -> None:
    assert tiers["test_said_by_hand"] == ({"slow"}, set())
    assert tiers["test_a_kind_said_by_hand"] == ({"slow", "eval"}, set())


def test_this_suite_s_slow_tests_are_marked(pytester: pytest.Pytester) -> None:
    """One file per kind of this suite, collected as ``make test-fast`` collects it."""
    expected = {
        "reader/test_gguf.py": "model",
        "mcp/test_stdio.py": "subprocess",
        "commands/test_output.py::test_a_terminal_shows_one_status_line_cleared_before_the_answer": "pty",
        "html/test_fuzz.py": "fuzz",
        "tui/test_snapshots.py": "snapshot",
        "tui/test_app.py": "tui",
    }
    for where, kind in expected.items():
        items, _ = pytester.inline_genitems(str(TESTS / where), "-p", "no:cacheprovider")
        assert items, where
        for item in items:
            assert item.get_closest_marker(kind) and item.get_closest_marker("slow"), item.nodeid
    fast, _ = pytester.inline_genitems(str(TESTS / "html/test_clean.py"), "-p", "no:cacheprovider")
    assert fast and not any(item.get_closest_marker("slow") for item in fast)
