"""What a reader is chosen from: servers on loopback and the configured server's listing
(``servers_around``), with what each backend finds on disk (``Backend.look``), gathered once
by ``registry.look_around``, loading nothing; and how models are named (hub ids, GGUF files
of hub repos).

``reader/registry.py`` makes the plan from it (``plan_reader``), a pure function that
``ask``, ``models``, ``config`` and the palette share. Nothing is ever downloaded for
``--reader auto``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from htmlrag_chat.reader.discover import Server, configured_server, find_servers, list_models

if TYPE_CHECKING:
    from htmlrag_chat.reader.settings import ReaderSettings


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
class Surroundings:
    configured: Server | None  # the server at base_url (its models when it lists them)
    found: tuple[Server, ...]  # servers answering on the probe ports
    here: dict[str, str] = field(default_factory=dict)  # by backend: what it found on disk


def servers_around(settings: ReaderSettings) -> tuple[Server | None, tuple[Server, ...]]:
    """The configured server (with its models when it lists them) and, for ``auto`` without
    one, the servers answering on the probe ports (blocking: within a fraction of a
    second)."""
    configured = None
    if settings.reader in ("auto", "openai") and settings.base_url:
        base_url = settings.base_url.rstrip("/")
        listed = list_models(base_url, settings.api_key)
        configured = listed or configured_server(base_url)
    found: Sequence[Server] = ()
    if settings.reader == "auto" and configured is None:
        found = find_servers(settings.probe_ports)
    return configured, tuple(found)
