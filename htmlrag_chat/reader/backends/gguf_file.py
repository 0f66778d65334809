"""The GGUF backend, all of it: a GGUF file read by llama.cpp in this process
(``reader/llama_cpp_chat.py``, the ``gguf`` extra), the practical reader on a CPU. It finds
its file (``look``): the one ``--model`` names (a path, or a file of a hub repo that
``models pull`` fetched), else the quant ``models pull reader`` fetches on a CPU machine,
else the largest file in the models folder (where ``make reader-models`` puts one). Nothing
is downloaded for ``auto``. It declares ``gpu_layers``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import platformdirs

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.modelio.device import gpu_possible
from htmlrag_chat.modelio.extras import install_line
from htmlrag_chat.modelio.hub import cached_file, hub_endpoint
from htmlrag_chat.modelio.listing import ModelRow, with_extra
from htmlrag_chat.reader.backend import Backend, LoadedReader, ReaderPlan, Warn
from htmlrag_chat.reader.choice import hub_file, is_gguf
from htmlrag_chat.reader.llama_cpp_chat import (
    EXTRA,
    LlamaCppChat,
    LlamaCppTokenCounter,
    gpu_offload,
)
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.settings.kinds import Integer
from htmlrag_chat.settings.tree import ANSWERING, Setting

if TYPE_CHECKING:
    from htmlrag_chat.reader.choice import Surroundings
    from htmlrag_chat.reader.settings import ReaderSettings

# The GGUF quant of the method's reader that ``models pull reader`` fetches on a CPU
# machine: 4.9 GB, the usual quality/size trade-off for an 8B model (Q4_K_M).
DEFAULT_GGUF_REPO = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"
DEFAULT_GGUF_FILE = "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
DEFAULT_GGUF = f"{DEFAULT_GGUF_REPO}/{DEFAULT_GGUF_FILE}"  # a file on the hub: repo/file
# GGUF files placed by hand or by ``make reader-models``; the variable moves the folder.
MODELS_ENV = "HTMLRAG_CHAT_MODELS"

GPU_LAYERS = Setting(
    "reader", "gpu_layers", Integer(most=1024, least=-1), -1,
    "a GGUF reader's layers llama.cpp offloads to the GPU when it was built with a GPU "
    "backend (CUDA, Metal, ...): -1 all, 0 none (the CPU)", (*ANSWERING, "models", "eval"),
)  # fmt: skip


def models_folder() -> Path:
    """Where ``auto`` looks for GGUF files besides the pulled quant: ``$HTMLRAG_CHAT_MODELS``,
    else ``models`` in the user data folder (``~/.local/share/htmlrag-chat/models``)."""
    named = os.environ.get(MODELS_ENV)
    if named:
        return expand_user(named, MODELS_ENV)
    return platformdirs.user_data_path("htmlrag-chat") / "models"


def folder_gguf(folder: Path) -> Path | None:
    """The largest GGUF file in ``folder`` (a bigger quant of the same family reads better;
    ties by name), or None."""
    try:
        files = [path for path in folder.iterdir() if is_gguf(path.name) and path.is_file()]
    except OSError:
        return None
    return max(files, key=lambda path: (path.stat().st_size, path.name), default=None)


class GGUFFile(Backend):
    """A GGUF file read by llama.cpp in this process: ``--model``'s, or the quant ``models
    pull reader`` fetches on a CPU machine."""

    name = "gguf"
    chosen_by = ("auto", "local")
    settings = (GPU_LAYERS,)
    extra = EXTRA

    def look(self, settings: ReaderSettings, cache_dir: Path | None) -> str | None:
        """``--model`` when it is a GGUF file here, else (unless it names another model) the
        pulled default quant, else the models folder's largest."""
        model = settings.model
        if is_gguf(model):
            path = expand_user(str(model))
            if path.is_file():
                return str(path)
            one_file = hub_file(str(model))
            pulled = cached_file(*one_file, cache_dir) if one_file else None
            return str(pulled) if pulled else None
        if model:
            return None
        pulled = cached_file(DEFAULT_GGUF_REPO, DEFAULT_GGUF_FILE, cache_dir)
        found = pulled or folder_gguf(models_folder())
        return str(found) if found else None

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        model, here = settings.model, around.here.get(self.name)
        if here is not None:
            why = f"reader: {Path(here).name} in this process (llama.cpp)"
            return ReaderPlan(self, settings, here, why)
        if not is_gguf(model):
            return None
        assert model is not None
        one_file = hub_file(model)
        problem = f"{model}: no such GGUF file"
        if one_file is not None:
            problem = f"{model} is not downloaded: htmlrag-chat models pull {model}"
        return ReaderPlan(self, settings, model, problem, problem=problem)

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        return self.on_disk(current, around)

    def load(self, plan: ReaderPlan, warn: Warn) -> LoadedReader:
        settings = plan.settings
        layers = settings.option(GPU_LAYERS.name)
        chat = LlamaCppChat(plan.model, settings.context_tokens, gpu_layers=layers)
        chat.load()
        return LLMReader(chat, self.name, settings.max_tokens, self.label(plan))

    def label(self, plan: ReaderPlan) -> str:
        return f"{Path(plan.model).name} (llama.cpp)"

    def own_counter(self, reader: LoadedReader) -> TokenCounter:
        chat = cast(LlamaCppChat, reader.chat)
        return LlamaCppTokenCounter(chat.load(), chat.name)

    def reads_on_cpu(self, reader: LoadedReader) -> bool:
        return not cast(LlamaCppChat, reader.chat).on_gpu

    def free_while_searching(self, reader: LoadedReader) -> bool:
        return not self.reads_on_cpu(reader)

    def row(self, plan: ReaderPlan, device: str, cache_dir: Path | None) -> ModelRow:
        """llama.cpp's device, not torch's: the GPU when this build offloads layers."""
        path = expand_user(plan.model)
        here = path.is_file()
        layers = plan.settings.option(GPU_LAYERS.name)
        if layers != 0 and gpu_offload():
            device = "gpu"
            note = f"llama.cpp, {'all' if layers < 0 else layers} layers on the GPU (--gpu-layers)"
        else:
            device, note = "cpu", "llama.cpp on the CPU"
            if layers != 0 and gpu_possible():
                note += " (this llama.cpp build has no GPU backend: see docs/install.md)"
        size = path.stat().st_size if here else None
        row = ModelRow("reader", plan.model, "file", str(path), here, size, device, note)
        return with_extra(replace(row, note=plan.problem) if plan.problem else row, EXTRA.name)

    def offered(self, device: str, cache_dir: Path | None) -> ModelRow | None:
        """On a CPU machine, the Q4_K_M quant of Llama-3.1-8B-Instruct."""
        if device != "cpu":
            return None
        page = f"{hub_endpoint()}/{DEFAULT_GGUF_REPO}"
        note = "answers are extractive until it is here; llama.cpp in this process: "
        note += install_line(EXTRA.name)
        return ModelRow("reader", DEFAULT_GGUF, "hub", page, False, None, device, note)
