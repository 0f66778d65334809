"""What a reader is chosen from: servers on loopback, the configured server's listing, model
files on disk; and how models are named (hub ids, GGUF files of hub repos).

``look_around`` finds all of it once, loading nothing; ``reader/registry.py`` makes the plan
from it (``plan_reader``), a pure function that ``ask``, ``models``, ``config`` and the
palette share. Nothing is ever downloaded for ``--reader auto``; the GGUF files it finds are
the quant ``models pull reader`` fetched, else the largest file in the models folder (where
``make reader-models`` puts one).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import platformdirs

from htmlrag_chat.base.hub import cached_file, complete_model, located_model
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.discover import Server, configured_server, find_servers, list_models

if TYPE_CHECKING:
    from htmlrag_chat.reader.settings import ReaderSettings

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
    """The reader models here: ``model`` when it is a GGUF file (a path, or a file of a hub
    repo that ``models pull`` fetched), else (unless ``model`` names another model) the
    pulled default GGUF, else the models folder's largest; the transformers model when
    complete."""
    if is_gguf(model):
        path = expand_user(str(model))
        if path.is_file():
            return OnDisk(gguf=str(path))
        one_file = hub_file(str(model))
        pulled = cached_file(*one_file, cache_dir) if one_file else None
        return OnDisk(gguf=str(pulled) if pulled else None)
    gguf = None
    if not model:
        gguf = cached_file(DEFAULT_GGUF_REPO, DEFAULT_GGUF_FILE, cache_dir)
        gguf = gguf or folder_gguf(models_folder())
    folder = located_model(model or DEFAULT_READER_MODEL, cache_dir)
    return OnDisk(
        gguf=str(gguf) if gguf else None,
        transformers=folder is not None and complete_model(folder),
    )
