"""The extractive backend (``reader/backends/no_llm.py``): it always answers, last; chosen,
it says so plainly; under ``auto`` its notice is grouped with the other missing models."""

from __future__ import annotations

from htmlrag_chat.base.events import Notice
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.registry import backend_of, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings


def test_chosen_or_fallen_back_to_it_says_which() -> None:
    chosen = plan_reader(ReaderSettings(reader="extractive"), Surroundings(None, ()))
    assert (chosen.backend.name, chosen.why) == ("extractive", "--reader extractive: no LLM")
    assert chosen.label == "extractive (no LLM)"
    fallen = plan_reader(ReaderSettings(), Surroundings(None, ()))
    assert fallen.why.startswith("no LLM found: answering extractively; for LLM answers")
    announced = fallen.backend.announce(fallen)
    assert announced == Notice(fallen.why, role="reader", instead="extractive answers (no LLM)")
    row = chosen.backend.row(chosen, "cpu", None)
    assert (row.model, row.where, row.present, row.note) == (
        "extractive",
        "built-in",
        True,
        "no LLM",
    )
    assert backend_of(ExtractiveReader()) is chosen.backend
