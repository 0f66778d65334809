"""Which reader answers, and why: one decision shared by ``ask``, ``models`` and the palette.

``plan_reader`` is a pure function of the settings and of what was found (servers on
loopback, the configured server's listing, model files on disk); ``look_around`` finds
those, loading nothing. ``--reader auto`` takes, in order: the configured server, a server
found on this machine, a GGUF file on disk (llama.cpp in this process, the practical
reader on a CPU: the quant ``models pull reader`` fetched, else the largest file in the
models folder, where ``make reader-models`` puts one), a transformers model on disk, and
else the extractive reader. Nothing is ever downloaded for ``auto``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from htmlrag_chat.hub import cached_file, complete_model, located_model
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.discover import (
    Server,
    best_model,
    choose_server,
    configured_server,
    find_servers,
    list_models,
)
from htmlrag_chat.safety import one_line

if TYPE_CHECKING:
    from htmlrag_chat.config import ReaderSettings

# The GGUF quant of the method's reader that ``models pull reader`` fetches on a CPU
# machine: 4.9 GB, the usual quality/size trade-off for an 8B model (Q4_K_M).
DEFAULT_GGUF_REPO = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"
DEFAULT_GGUF_FILE = "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
DEFAULT_GGUF = f"{DEFAULT_GGUF_REPO}/{DEFAULT_GGUF_FILE}"  # a file on the hub: repo/file
# GGUF files placed by hand or by ``make reader-models``; the variable moves the folder.
MODELS_ENV = "HTMLRAG_CHAT_MODELS"


def models_folder() -> Path:
    """Where ``auto`` looks for GGUF files besides the pulled quant: ``$HTMLRAG_CHAT_MODELS``,
    else ``models`` in the user data folder (``~/.local/share/htmlrag-chat/models``)."""
    named = os.environ.get(MODELS_ENV)
    if named:
        return Path(named).expanduser()
    return platformdirs.user_data_path("htmlrag-chat") / "models"


def folder_gguf(folder: Path) -> Path | None:
    """The largest GGUF file in ``folder`` (a bigger quant of the same family reads better;
    ties by name), or None."""
    try:
        files = [path for path in folder.iterdir() if is_gguf(path.name) and path.is_file()]
    except OSError:
        return None
    return max(files, key=lambda path: (path.stat().st_size, path.name), default=None)


def no_llm_hint(model: str | None = None) -> str:
    """How to get an LLM reader: a server, or ``models pull`` of ``model`` when it is a hub
    id or file (``owner/name``). A server's model name (``llama3.1:8b``) is neither, so the
    reader role is offered (a GGUF quant on a CPU machine) instead of a pull that would be
    refused."""
    servers = (
        "for LLM answers, start Ollama, LM Studio, llama.cpp's server or vLLM (found on their "
        "default ports)"
    )
    if model and (is_hub_id(model) or hub_file(model)):
        return f"{servers}, or download a model: htmlrag-chat models pull {model}"
    serving = f" serving {model!r}" if model and not model.startswith(("/", ".", "~")) else ""
    return f"{servers}{serving}, or download a model: htmlrag-chat models pull reader"


def is_hub_id(model: str) -> bool:
    """``owner/name`` as Hugging Face spells a repository (what ``models pull`` takes)."""
    return re.fullmatch(r"[\w.-]+/[\w.-]+", model) is not None and not model.startswith(".")


def is_gguf(name: str | None) -> bool:
    return bool(name) and str(name).lower().endswith(".gguf")


def hub_file(name: str) -> tuple[str, str] | None:
    """``owner/name/file.gguf`` as (repo id, file name): one GGUF file of a hub repo."""
    parts = name.split("/")
    if len(parts) == 3 and all(parts) and is_gguf(name) and not name.startswith((".", "~")):
        return f"{parts[0]}/{parts[1]}", parts[2]
    return None


@dataclass(frozen=True)
class OnDisk:
    """Reader models on this machine: a GGUF file (the one ``model`` names, else the pulled
    default quant) and whether the transformers model is complete here."""

    gguf: str | None = None
    transformers: bool = False


@dataclass(frozen=True)
class Surroundings:
    configured: Server | None  # the server at base_url (its models when it lists them)
    found: tuple[Server, ...]  # servers answering on the probe ports
    disk: OnDisk


@dataclass(frozen=True)
class ReaderPlan:
    """The reader that will answer: ``kind`` is server, gguf, transformers or extractive."""

    kind: str
    model: str  # the server's model name, the GGUF file, the hub id or folder, "extractive"
    why: str  # one line for the user
    server: Server | None = None
    configured: bool = False  # the configured server (the API key goes to it only)
    local_only: bool = False  # a model already here, never a download
    problem: str | None = None  # settings that cannot work (building this reader fails)

    @property
    def label(self) -> str:
        """The reader in a few words: ``llama3.1:8b on Ollama at 127.0.0.1:11434``."""
        if self.kind == "server" and self.server is not None:
            return f"{one_line(self.model)} on {self.server.describe()}"
        if self.kind == "gguf":
            return f"{Path(self.model).name} (llama.cpp)"
        if self.kind == "transformers":
            return f"{one_line(self.model)} (transformers)"
        return "extractive (no LLM)"


def plan_reader(settings: ReaderSettings, around: Surroundings) -> ReaderPlan:
    """The reader ``settings`` choose, given what is ``around``."""
    kind = settings.reader
    if kind == "extractive":
        return ReaderPlan("extractive", "extractive", "--reader extractive: no LLM")
    if kind in ("auto", "openai") and around.configured is not None:
        server = around.configured
        model = settings.model or best_model(server.models) or DEFAULT_READER_MODEL
        why = f"reader: {one_line(model)} on {server.describe()} (configured)"
        return ReaderPlan("server", model, why, server, configured=True)
    if kind == "openai":
        problem = (
            "--reader openai needs the server's URL: --base-url or base_url in the "
            "[reader] table of the config file"
        )
        return ReaderPlan("server", settings.model or "", problem, problem=problem)
    if kind == "auto":
        choice = choose_server(around.found, settings.model)
        if choice is not None:
            where = f"{choice.server.describe()} (found on this machine)"
            why = f"reader: {one_line(choice.model)} on {where}"
            return ReaderPlan("server", choice.model, why, choice.server)
    local_only = kind == "auto"
    if is_gguf(settings.model) or around.disk.gguf:
        if not local_only or around.disk.gguf:
            model = settings.model if is_gguf(settings.model) else around.disk.gguf
            assert model is not None
            why = f"reader: {Path(model).name} in this process (llama.cpp)"
            return ReaderPlan("gguf", model, why, local_only=local_only)
    elif not local_only or around.disk.transformers:
        model = settings.model or DEFAULT_READER_MODEL
        why = f"reader: {one_line(model)} in this process (transformers)"
        return ReaderPlan("transformers", model, why, local_only=local_only)
    wanted = f"{settings.model} is not here: " if settings.model else "no LLM found: "
    return ReaderPlan(
        "extractive", "extractive", f"{wanted}answering extractively; {no_llm_hint(settings.model)}"
    )


def look_around(settings: ReaderSettings, cache_dir: Path | None = None) -> Surroundings:
    """What ``plan_reader`` needs to know, found without loading anything (blocking: the
    servers are asked here, within a fraction of a second)."""
    configured = None
    if settings.reader in ("auto", "openai") and settings.base_url:
        base_url = settings.base_url.rstrip("/")
        listed = list_models(base_url, settings.api_key)
        configured = listed or configured_server(base_url)
    found: Sequence[Server] = ()
    if settings.reader == "auto" and configured is None:
        found = find_servers(settings.probe_ports)
    return Surroundings(configured, tuple(found), on_disk(settings.model, cache_dir))


def on_disk(model: str | None, cache_dir: Path | None = None) -> OnDisk:
    """The reader models here: ``model`` when it is a GGUF file, else (unless ``model``
    names another model) the pulled default GGUF, else the models folder's largest; the
    transformers model when complete."""
    if is_gguf(model):
        path = Path(str(model)).expanduser()
        return OnDisk(gguf=str(path) if path.is_file() else None)
    gguf = None
    if not model:
        gguf = cached_file(DEFAULT_GGUF_REPO, DEFAULT_GGUF_FILE, cache_dir)
        gguf = gguf or folder_gguf(models_folder())
    folder = located_model(model or DEFAULT_READER_MODEL, cache_dir)
    return OnDisk(
        gguf=str(gguf) if gguf else None,
        transformers=folder is not None and complete_model(folder),
    )
