"""What an answer record is keyed by: the code that makes the answer, not the code that
grades it."""

from __future__ import annotations

from htmlrag_chat.eval.code import code_modules
from htmlrag_chat.eval_answers.runner import ROOTS


def test_a_changed_check_or_grade_costs_no_model_call() -> None:
    """The evidence check and the grades run on every report from the stored answer, so
    editing them must leave every cached answer's key as it was; the reader, the prompt
    layout and the reading make the answer, so they are in it."""
    modules = code_modules(roots=ROOTS)
    assert not any(m.startswith("htmlrag_chat.evidence") for m in modules)
    assert "htmlrag_chat.eval_answers.grading" not in modules
    for module in ("reader.llm", "reader.gguf", "reader.layout", "eval_answers.reading"):
        assert f"htmlrag_chat.{module}" in modules
