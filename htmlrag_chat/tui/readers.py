"""The reader in the header, and switching it from the command palette.

The palette offers the extractive reader, the local model when it is on disk (a GGUF file
first), every chat model of the configured server and of the servers found on loopback
(``reader/discover.py``), and ``auto`` with the reader it picks now. The probe runs each
time the palette opens, in a thread and within a fraction of a second, so a server started
while the app runs shows up.
Model names come from the servers: they are shown as plain text, never as markup.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.choice import Surroundings, on_disk, plan_reader
from htmlrag_chat.reader.discover import (
    Server,
    chat_models,
    configured_server,
    find_servers,
    list_models,
    server_name,
)
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.safety import one_line

if TYPE_CHECKING:
    from htmlrag_chat.tui.app import ChatApp


@dataclass(frozen=True)
class ReaderChoice:
    title: str  # what the palette lists
    help: str
    settings: ReaderSettings  # the reader settings that choose it


def reader_label(reader: LLMReader | ExtractiveReader) -> str:
    """The reader as the header names it: ``llama3.1:8b on Ollama``."""
    if not isinstance(reader, LLMReader):
        return "extractive reader (no LLM)"
    name = one_line(reader.name)
    base_url = getattr(reader.chat, "base_url", None)
    if base_url is not None:
        return f"{name} on {server_name(base_url)}"
    return f"{Path(name).name if Path(name).is_dir() else name} (local)"  # a folder's name


def reader_choices(current: ReaderSettings) -> list[ReaderChoice]:
    """What the palette offers (blocking: the servers are asked here), ending with ``auto``
    and the reader it picks now (``reader.choice.plan_reader``, as ``ask`` picks it)."""
    choices = [
        ReaderChoice(
            "Reader: extractive (no LLM)",
            "Quote the sources' best sentences, each cited",
            replace(current, reader="extractive"),
        )
    ]
    disk = on_disk(current.model)
    if disk.gguf:
        choices.append(
            ReaderChoice(
                f"Reader: {Path(disk.gguf).name} (local, llama.cpp)",
                "The GGUF model on disk, run in this process",
                replace(current, reader="local", model=disk.gguf, base_url=None),
            )
        )
    elif disk.transformers:
        name = current.model or DEFAULT_READER_MODEL
        choices.append(
            ReaderChoice(
                f"Reader: {name} (local)",
                "The local transformers model on disk",
                replace(current, reader="local", model=name, base_url=None),
            )
        )
    servers = _servers(current)
    for server, configured in servers:
        for model in chat_models(server.models):
            choices.append(
                ReaderChoice(
                    f"Reader: {one_line(model)} on {server.describe()}",
                    f"The model served at {server.base_url}",
                    replace(
                        current,
                        reader="openai",
                        base_url=server.base_url,
                        model=model,
                        api_key=current.api_key if configured else None,
                    ),
                )
            )
    configured = next((server for server, mine in servers if mine), None)
    if configured is None and current.base_url:
        configured = configured_server(current.base_url)
    found = tuple(server for server, mine in servers if not mine)
    auto = replace(current, reader="auto")
    plan = plan_reader(auto, Surroundings(configured, () if configured else found, disk))
    choices.append(ReaderChoice(f"Reader: auto, now {plan.label}", plan.why, auto))
    return choices


def _servers(current: ReaderSettings) -> list[tuple[Server, bool]]:
    """The configured server (when it lists its models), then those found on loopback."""
    servers: list[tuple[Server, bool]] = []
    if current.base_url:
        listed = list_models(current.base_url, current.api_key)
        if listed is not None:
            servers.append((listed, True))
    known = {server.base_url for server, _ in servers}
    servers += [(s, False) for s in find_servers(current.probe_ports) if s.base_url not in known]
    return servers


class ReaderCommands(Provider):
    """The palette's "Reader: ..." commands."""

    async def startup(self) -> None:
        app = cast("ChatApp", self.app)
        self.choices = await asyncio.to_thread(reader_choices, app.options.reader)

    async def discover(self) -> Hits:
        for choice in self.choices:
            yield DiscoveryHit(
                Content(choice.title), self._command(choice), choice.title, escape(choice.help)
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for choice in self.choices:
            score = matcher.match(choice.title)
            if score > 0:
                yield Hit(
                    score,
                    Content(choice.title),
                    self._command(choice),
                    choice.title,
                    escape(choice.help),
                )

    def _command(self, choice: ReaderChoice) -> partial[None]:
        return partial(cast("ChatApp", self.app).switch_reader, choice.settings)
