"""The transformers backend: a causal LM in this process (``reader/local.py``, the
``transformers`` extra). It finds the model ``--model`` names (default
Llama-3.1-8B-Instruct) when it is complete here (``look``), offers it for a pull on a GPU
machine, and lists it in the palette when it is on disk. Nothing is downloaded for
``auto``; a model the user names that cannot be used is a plan with a ``problem``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

from htmlrag_chat.base.counting import HFTokenCounter, TokenCounter
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.modelio.hub import complete_model, located_model, not_a_model
from htmlrag_chat.modelio.listing import ModelRow, model_row, with_extra
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.backend import Backend, LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.choice import is_gguf, is_hub_id, no_llm_hint
from htmlrag_chat.reader.llm import LLMReader

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings


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
