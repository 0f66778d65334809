"""Eval results are keyed by the code that made them: a changed scorer is measured again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from htmlrag_chat.base.imports import ROOT
from htmlrag_chat.base.prompts import PROMPTS_DIR
from htmlrag_chat.eval.code import code_fingerprint, code_modules, installed_fingerprint


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's source and prompts, copied so that they can be edited."""
    base = tmp_path_factory.mktemp("code")
    shutil.copytree(ROOT, base / "htmlrag_chat", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(PROMPTS_DIR, base / "prompts")
    return base


def _edited(copy: Path, relative: str, edit: str = "\n# edited\n") -> str:
    """The fingerprint of the copy with ``edit`` appended to one file, which is restored."""
    path = copy / relative
    original = path.read_bytes()
    path.write_bytes(original + edit.encode("utf-8"))
    try:
        return code_fingerprint(copy / "htmlrag_chat", copy / "prompts")
    finally:
        path.write_bytes(original)


def test_a_copy_of_the_same_code_has_the_same_fingerprint(copy: Path) -> None:
    assert code_fingerprint(copy / "htmlrag_chat", copy / "prompts") == installed_fingerprint()


@pytest.mark.parametrize(
    "relative",
    [
        "htmlrag_chat/scoring/fused.py",  # the fused stage
        "htmlrag_chat/pruning/recipe.py",  # granularity and budgets
        "htmlrag_chat/pruning/factory.py",  # which scorers a recipe loads
        "htmlrag_chat/html/prune.py",  # reached only through other modules
        "prompts/pruner.md",  # the generative pruner's prompt
    ],
)
def test_editing_code_a_result_depends_on_changes_the_key(copy: Path, relative: str) -> None:
    assert _edited(copy, relative) != installed_fingerprint()


@pytest.mark.parametrize(
    "relative",
    ["htmlrag_chat/tui/app.py", "htmlrag_chat/reader/llm.py", "htmlrag_chat/agent/loop.py"],
)
def test_editing_code_no_result_depends_on_keeps_the_key(copy: Path, relative: str) -> None:
    assert (copy / relative).exists()
    assert _edited(copy, relative) == installed_fingerprint()


def test_the_fingerprint_covers_the_recipe_and_every_scorer() -> None:
    modules = code_modules()
    for module in (
        "pruning.recipe",
        "pruning.factory",
        "pruning.pipeline",
        "scoring.fused",
        "scoring.embed",
    ):
        assert f"htmlrag_chat.{module}" in modules
    assert not any(m.startswith(("htmlrag_chat.reader", "htmlrag_chat.tui")) for m in modules)
