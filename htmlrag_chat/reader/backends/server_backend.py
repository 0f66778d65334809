"""What the two server backends share: an OpenAI-compatible server read over HTTP, its
window asked of it, its tokenize endpoint counting budgets when it has one (llama.cpp), its
row in ``models`` saying whether it lists the model. The configured server
(``configured_server.py``) and the found one (``found_server.py``) say when they answer.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.modelio.listing import ModelRow
from htmlrag_chat.reader.backend import Backend, Counting, LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.discover import Server, best_model, chat_models
from htmlrag_chat.reader.llm import LLMReader

if TYPE_CHECKING:
    from htmlrag_chat.reader.openai import OpenAIChat
    from htmlrag_chat.reader.settings import ReaderSettings


class ServerBackend(Backend):
    """An OpenAI-compatible server: what the configured and the found one share."""

    configured = False  # the API key goes to the configured server only
    palette_rank = 2

    def served(self, current: ReaderSettings, server: Server) -> list[tuple[ReaderSettings, str]]:
        """The palette's entries for ``server``: each chat model it lists, read there."""
        api_key = current.api_key if self.configured else None
        return [
            (
                replace(
                    current, reader="openai", base_url=server.base_url, model=model,
                    api_key=api_key,
                ),
                f"The model served at {server.base_url}",
            )
            for model in chat_models(server.models)
        ]  # fmt: skip

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        from htmlrag_chat.reader.openai import OpenAIChat
        from htmlrag_chat.reader.window import context_window

        server, settings = plan.server, plan.settings
        assert server is not None
        api_key = settings.api_key if self.configured else None
        window = settings.context_tokens or context_window(
            server.name, server.base_url, plan.model, api_key
        )
        chat = OpenAIChat(
            base_url=server.base_url,
            model=plan.model,
            api_key=api_key,
            context_tokens=window,
            llama_cpp=server.name == "llama.cpp",
            warn=warn,
        )
        return LLMReader(chat, self.name, settings.max_tokens, self.label(plan))

    def label(self, plan: ReaderPlan) -> str:
        assert plan.server is not None
        return f"{one_line(plan.model)} on {plan.server.describe()}"

    def counter(
        self, reader: LoadedReader, tokenizer: str | None, fallback: Counting
    ) -> TokenCounter:
        """The server's tokenize endpoint when it has one (llama.cpp), else ``fallback``'s;
        the chat compares it with what the server says it read, to tell when it read less."""
        from htmlrag_chat.reader.window import ServerTokenCounter, token_route

        chat = cast("OpenAIChat", reader.chat)
        route = None if tokenizer else token_route(chat.base_url)
        counter = ServerTokenCounter(chat.base_url, chat.model, route) if route else fallback()
        chat.counter = counter
        return counter

    def row(self, plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
        server = plan.server
        if server is None:  # --reader openai without a URL
            return super().row(plan, device, cache_dir)
        from htmlrag_chat.reader.discover import unreachable

        listed = best_model(server.models, plan.model) is not None
        if not self.configured:
            note = f"found: {server.describe()}"
        elif server.models:
            note = "" if listed else "the server lists no such model"
        elif (down := unreachable(server.base_url)) is not None:
            note = f"nothing answers at {server.address} ({down})"
        else:
            note = f"{server.describe()} answers but lists no models"
        return ModelRow("reader", plan.model, "server", server.base_url, listed, None, None, note)
