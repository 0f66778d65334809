"""The configured server backend: the OpenAI-compatible server at ``--base-url`` (or
``base_url`` in the settings file), first under ``auto`` and the one ``--reader openai``
reads. It alone gets the API key; an unreachable one is said before any search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.reader import DEFAULT_READER_MODEL, ReaderFailed
from htmlrag_chat.reader.backend import LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.backends.server_backend import ServerBackend
from htmlrag_chat.reader.discover import best_model

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings


class ConfiguredServer(ServerBackend):
    """The server at ``--base-url`` (or ``base_url`` in the settings file)."""

    name = "openai"
    chosen_by = ("auto", "openai")
    configured = True

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        """Each chat model the configured server lists (none when it lists none)."""
        return [] if around.configured is None else self.served(current, around.configured)

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        server = around.configured
        if server is not None:
            model = settings.model or best_model(server.models) or DEFAULT_READER_MODEL
            why = f"reader: {one_line(model)} on {server.describe()} (configured)"
            return ReaderPlan(self, settings, model, why, server)
        if settings.reader != "openai":
            return None
        problem = (
            "--reader openai needs the server's URL: --base-url or base_url in the [reader] "
            "table of the config file"
        )
        return ReaderPlan(self, settings, settings.model or "", problem, problem=problem)

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        from htmlrag_chat.reader.discover import unreachable

        assert plan.server is not None
        down = unreachable(plan.server.base_url)
        if down is not None:  # said before any search or pruning, not after them
            raise ReaderFailed(
                f"cannot reach the reader server at {safe_url(plan.server.base_url)} "
                f"({down}): start it, fix --base-url, or answer without it: --reader extractive"
            )
        return super().load(plan, warn)
