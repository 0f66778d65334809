"""The found server backend: a reader server on this machine's default ports (Ollama, LM
Studio, llama.cpp's server, vLLM; ``reader/discover.py`` finds them), asked by ``auto``
only, after the configured server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from htmlrag_chat.base.safety import one_line
from htmlrag_chat.reader.backend import ReaderPlan
from htmlrag_chat.reader.backends.server_backend import ServerBackend
from htmlrag_chat.reader.discover import choose_server

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings


class FoundServer(ServerBackend):
    """Ollama, LM Studio, llama.cpp's server or vLLM, found on 127.0.0.1's default ports:
    the best chat model they list, or the one ``--model`` names."""

    name = "found"
    chosen_by = ("auto",)

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        """Each chat model of each server found, read there (without the API key)."""
        return [entry for server in around.found for entry in self.served(current, server)]

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        choice = choose_server(around.found, settings.model)
        if choice is None:
            return None
        where = f"{choice.server.describe()} (found on this machine)"
        why = f"reader: {one_line(choice.model)} on {where}"
        return ReaderPlan(self, settings, choice.model, why, choice.server)
