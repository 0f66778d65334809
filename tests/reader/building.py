"""The reader ``ask`` loads for some reader settings: ``wiring.build_parts`` without the
pruning, so that a test of the reader plan needs no pruning models."""

from __future__ import annotations

from htmlrag_chat.base.events import EventSink
from htmlrag_chat.reader.backend import LoadedReader
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.registry import load_reader, look_around, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings


def build_reader(
    settings: ReaderSettings, emit: EventSink, around: Surroundings | None = None
) -> LoadedReader:
    """As ``wiring.resolve`` plans it and ``wiring.build_parts`` loads it."""
    _, reader = load_reader(plan_reader(settings, around or look_around(settings)), emit)
    return reader
