"""Four of the reader backends: the configured server, a server found on this machine, a
transformers model, and the extractive reader (the GGUF file's is ``reader/gguf/``).
``reader/registry.py`` lists them in ``--reader auto``'s order; each says when it answers,
how it loads, what it counts and how it is listed.
Nothing is downloaded for ``auto``, and a model the user names (``--model``) that cannot be
used is a plan with a ``problem``, never an extractive answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from htmlrag_chat.base.counting import HFTokenCounter, TokenCounter
from htmlrag_chat.base.events import Notice
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.modelio.hub import complete_model, located_model, not_a_model
from htmlrag_chat.modelio.listing import ModelRow, model_row, with_extra
from htmlrag_chat.reader import DEFAULT_READER_MODEL, ReaderFailed
from htmlrag_chat.reader.backend import Backend, Counting, LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.choice import is_gguf, is_hub_id, no_llm_hint
from htmlrag_chat.reader.discover import best_model, choose_server
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.openai import OpenAIChat
    from htmlrag_chat.reader.settings import ReaderSettings


class _Server(Backend):
    """An OpenAI-compatible server: what the configured and the found one share."""

    configured = False  # the API key goes to the configured server only

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


class ConfiguredServer(_Server):
    """The server at ``--base-url`` (or ``base_url`` in the settings file)."""

    name = "openai"
    chosen_by = ("auto", "openai")
    configured = True

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


class FoundServer(_Server):
    """Ollama, LM Studio, llama.cpp's server or vLLM, found on 127.0.0.1's default ports:
    the best chat model they list, or the one ``--model`` names."""

    name = "found"
    chosen_by = ("auto",)

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        choice = choose_server(around.found, settings.model)
        if choice is None:
            return None
        where = f"{choice.server.describe()} (found on this machine)"
        why = f"reader: {one_line(choice.model)} on {where}"
        return ReaderPlan(self, settings, choice.model, why, choice.server)


class TransformersModel(Backend):
    """A transformers causal LM in this process (the ``transformers`` extra): ``--model``'s
    hub id or folder, default Llama-3.1-8B-Instruct; ``auto`` only reads one already here."""

    name = "transformers"
    chosen_by = ("auto", "local")

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        model = settings.model or DEFAULT_READER_MODEL
        wrong = not_a_model(model, gguf=True)
        if wrong is not None:  # said before any server, download or torch hint
            return ReaderPlan(self, settings, model, str(wrong), problem=f"--model {wrong}")
        if settings.reader != "auto" or self.name in around.here:
            why = f"reader: {one_line(model)} in this process (transformers)"
            return ReaderPlan(self, settings, model, why)
        if settings.model is None:
            return None
        problem = f"--model {model}: {_not_here(model)}; {no_llm_hint(model)}"
        return ReaderPlan(self, settings, model, problem, problem=problem)

    def look(self, settings: ReaderSettings, cache_dir: Path | None) -> str | None:
        """The model ``--model`` names (default Llama-3.1-8B-Instruct) when it is complete
        here; never for a GGUF file."""
        model = settings.model or DEFAULT_READER_MODEL
        if is_gguf(model):
            return None
        folder = located_model(model, cache_dir)
        return model if folder is not None and complete_model(folder) else None

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        return self.on_disk(current, around)

    def offered(self, device: str, cache_dir: Path | None) -> ModelRow | None:
        """On a GPU, the method's reader, Llama-3.1-8B-Instruct."""
        if device == "cpu":
            return None
        missing = "answers are extractive until it is here"
        return model_row("reader", DEFAULT_READER_MODEL, device, cache_dir, missing=missing)

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        if plan.unusable is not None:  # a model that is not here costs no torch import
            raise plan.unusable
        from htmlrag_chat.reader.local import LocalChat

        chat = LocalChat(plan.model, plan.settings.device, plan.auto)
        chat.load()
        return LLMReader(chat, self.name, plan.settings.max_tokens, self.label(plan))

    def hub_models(self, plan: ReaderPlan) -> dict[str, bool]:
        return {plan.model: plan.auto}

    def label(self, plan: ReaderPlan) -> str:
        path = expand_user(plan.model)
        return f"{path.name if path.is_dir() else one_line(plan.model)} (transformers)"

    def own_counter(self, reader: LoadedReader) -> TokenCounter:
        from htmlrag_chat.reader.local import LocalChat

        chat = cast("LocalChat", reader.chat)
        _, tokenizer = chat.load()  # loaded already
        return HFTokenCounter(tokenizer, chat.model_name)

    def reads_on_cpu(self, reader: LoadedReader) -> bool:
        from htmlrag_chat.reader.local import LocalChat

        model, _ = cast("LocalChat", reader.chat).load()  # loaded already
        return bool(model.device.type == "cpu")

    def free_while_searching(self, reader: LoadedReader) -> bool:
        return not self.reads_on_cpu(reader)

    def row(self, plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
        row = model_row("reader", plan.model, device, cache_dir, missing=plan.problem or "")
        return with_extra(row, "transformers")


def _not_here(model: str) -> str:
    """Why ``--reader auto`` cannot read the model the user named."""
    path = expand_user(model)
    if path.is_dir():
        return "no complete model in that folder (config.json and weights)"
    if model.startswith(("/", ".", "~")):
        return "no such model folder or GGUF file"
    if is_hub_id(model):
        return "no server found lists it, and it is not downloaded (auto never downloads)"
    return "no server found on 127.0.0.1 lists it, and no model folder of that name is here"


class Extractive(Backend):
    """No LLM: the sources' sentences that best match the question, each cited."""

    name = "extractive"
    chosen_by = ("auto", "extractive")

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
