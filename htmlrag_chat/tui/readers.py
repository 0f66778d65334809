"""The reader in the header, and switching it from the command palette.

The palette offers each backend's own entries (``Backend.palette``: the extractive reader,
the local model when it is on disk, every chat model of the configured server and of the
servers found on loopback, ``reader/discover.py``), and ``auto`` with the reader it picks
now; entries that name the same reader are listed once. Each entry is named by
the reader plan of its settings (``reader/registry.py``), as ``ask`` would plan them, and
the header by the loaded reader's label, both its backend's words. The probe runs each time
the palette opens, in a thread and within a fraction of a second, so a server started while
the app runs shows up. Model names come from the servers: they are shown as plain text,
never as markup.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.discover import Server, configured_server, find_servers, list_models
from htmlrag_chat.reader.registry import look_around, palette_entries, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings

if TYPE_CHECKING:
    from htmlrag_chat.tui.app import ChatApp


@dataclass(frozen=True)
class ReaderChoice:
    title: str  # what the palette lists
    help: str
    settings: ReaderSettings  # the reader settings that choose it


def reader_choices(current: ReaderSettings) -> list[ReaderChoice]:
    """What the palette offers (blocking: the servers are asked here): each backend's
    entries (``reader.registry.palette_entries``: the extractive reader, the models on
    disk, each server's chat models), ending with ``auto`` and the reader it picks now
    (``reader.registry.plan_reader``, as ``ask`` picks it)."""
    here = look_around(replace(current, reader="local")).here  # on disk, asking no server
    servers = _servers(current)
    configured = next((server for server, mine in servers if mine), None)
    if configured is None and current.base_url:
        configured = configured_server(current.base_url)
    found = tuple(server for server, mine in servers if not mine)
    around = Surroundings(configured, found, here)
    listed = {server.base_url: server for server, _ in servers}

    def choice(settings: ReaderSettings, help: str, auto: bool = False) -> ReaderChoice:
        # An entry reading at a server is planned with that server's listing, as ``ask``
        # would list it.
        server = listed.get(settings.base_url or "") if settings.reader == "openai" else None
        plan = plan_reader(settings, Surroundings(server, (), here) if server else around)
        title = f"Reader: auto, now {plan.label}" if auto else f"Reader: {plan.label}"
        return ReaderChoice(title, plan.why if auto else help, settings)

    choices: list[ReaderChoice] = []
    for settings, help in palette_entries(current, around):
        offered = choice(settings, help)
        if offered.title not in (earlier.title for earlier in choices):
            choices.append(offered)
    choices.append(choice(replace(current, reader="auto"), "", auto=True))
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
