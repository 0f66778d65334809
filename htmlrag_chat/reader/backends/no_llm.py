"""The extractive backend: no LLM, the sources' best sentences quoted and cited
(``reader/extractive.py``). Last in ``auto``'s order, it always answers; under ``auto`` its
notice joins the other missing models', and ``models`` lists the model a pull would get
instead (``registry.reader_row``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.events import Notice
from htmlrag_chat.modelio.listing import ModelRow
from htmlrag_chat.reader.backend import Backend, LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.choice import no_llm_hint
from htmlrag_chat.reader.extractive import ExtractiveReader

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings


class Extractive(Backend):
    """No LLM: the sources' sentences that best match the question, each cited."""

    name = "extractive"
    chosen_by = ("auto", "extractive")
    palette_rank = 0

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        """Always offered, first."""
        chosen = replace(current, reader="extractive")
        return [(chosen, "Quote the sources' best sentences, each cited")]

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        if settings.reader == "extractive":
            return ReaderPlan(self, settings, "extractive", "--reader extractive: no LLM")
        why = f"no LLM found: answering extractively; {no_llm_hint()}"
        return ReaderPlan(self, settings, "extractive", why)

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        return ExtractiveReader()

    def label(self, plan: ReaderPlan) -> str:
        return ExtractiveReader.label

    def announce(self, plan: ReaderPlan) -> Notice:
        """Grouped with the other missing models (``ask`` says them once per cache)."""
        return Notice(plan.why, role="reader", instead="extractive answers (no LLM)")

    def row(self, plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
        """Under ``auto``, ``registry.reader_row`` lists the model a pull would get instead
        (the first backend's ``offered``)."""
        return ModelRow("reader", "extractive", "built-in", None, True, None, None, "no LLM")
