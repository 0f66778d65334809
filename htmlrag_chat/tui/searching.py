"""Search controls from the command palette: sites, time, region and backends.

What the palette sets holds for the questions that follow in this conversation (the config
file is not touched; a new chat goes back to the settings the app started with): it
replaces the search settings the agent's searcher uses, with no reload of the models.
Free-form values come from what the user types after the command word (``site
example.org``, ``exclude pinterest.com``, ``region de-de``, ``backends searxng,
duckduckgo``); the palette lists the fixed ones (time ranges, clearing the filters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from htmlrag_chat.settings.kinds import domain
from htmlrag_chat.settings.tree import NO_REGION, TIMES, find
from htmlrag_chat.web.search import WebSearcher
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:
    from htmlrag_chat.agent.loop import Agent
    from htmlrag_chat.tui.app import ChatApp

_TYPED = {"site": "site", "exclude": "exclude_site", "region": "region", "backends": "backends"}


@dataclass(frozen=True)
class SearchChoice:
    title: str  # what the palette lists
    help: str
    settings: SearchSettings  # the search settings it sets


def fixed_choices(current: SearchSettings) -> list[SearchChoice]:
    """The palette's search commands that need no typed value."""
    choices = [
        SearchChoice(
            f"Search: results from the last {t}", "Until changed", replace(current, time=t)
        )
        for t in TIMES
        if t != current.time
    ]
    if current.time:
        choices.append(
            SearchChoice("Search: any time", "No time filter", replace(current, time=None))
        )
    if current.site or current.exclude_site:
        every = replace(current, site=(), exclude_site=())
        choices.append(SearchChoice("Search: all sites", "No site filter", every))
    choices.append(
        SearchChoice(
            "Search: site DOMAIN, exclude DOMAIN, region CODE, backends A,B",
            "Type one of these after 'Search:' to set it",
            current,
        )
    )
    return choices


def typed_choice(current: SearchSettings, query: str) -> SearchChoice | None:
    """The command a typed ``site example.org`` (and the like) stands for, or None."""
    words = query.removeprefix("Search:").replace(":", " ").split()
    if len(words) != 2 or words[0].lower() not in _TYPED:
        return None
    name, value = _TYPED[words[0].lower()], words[1]
    try:
        if name == "site":
            site = domain(value)
            settings = replace(current, site=(*current.site, site))
            return SearchChoice(f"Search: only {site}", "Add a site to search", settings)
        if name == "exclude_site":
            site = domain(value)
            settings = replace(current, exclude_site=(*current.exclude_site, site))
            return SearchChoice(f"Search: never {site}", "Leave a site out", settings)
        if name == "backends":
            backends = find("search.backends").kind.parse(value)  # as --backends checks it
            title = f"Search: backends {','.join(backends)}"
            return SearchChoice(title, "In fallback order", replace(current, backends=backends))
    except ValueError:
        return None
    region = value.lower()
    return SearchChoice(
        f"Search: region {region}", "e.g. de-de, us-en", replace(current, region=region)
    )


def switch_search(app: ChatApp, settings: SearchSettings) -> None:
    """Search with ``settings`` from the next question on; the loaded agent keeps its
    models and gets a new searcher (one still loading gets it when it is ready)."""
    app.options = replace(app.options, search=settings)

    def update(agent: Agent) -> None:
        agent.web.searcher = WebSearcher(settings, app.post_event)

    future = app._agent
    if future is not None and future.done() and not future.exception():
        update(future.result())
    elif future is not None and not future.done():
        future.add_done_callback(lambda done: None if done.exception() else update(done.result()))
    app.notify(describe(settings), title="Search")


def describe(settings: SearchSettings) -> str:
    """The search settings in one line, for the notification."""
    parts = [",".join(settings.backends)]
    parts += [f"only {site}" for site in settings.site]
    parts += [f"never {site}" for site in settings.exclude_site]
    if settings.time:
        parts.append(f"last {settings.time}")
    if settings.region != NO_REGION:
        parts.append(f"region {settings.region}")
    return " · ".join(parts)


class SearchCommands(Provider):
    """The palette's "Search: ..." commands."""

    async def discover(self) -> Hits:
        for choice in fixed_choices(self._current()):
            yield DiscoveryHit(
                Content(choice.title), self._command(choice), choice.title, escape(choice.help)
            )

    async def search(self, query: str) -> Hits:
        current = self._current()
        typed = typed_choice(current, query)
        if typed is not None:
            help_text = escape(typed.help)
            yield Hit(1.0, Content(typed.title), self._command(typed), typed.title, help_text)
        matcher = self.matcher(query)
        for choice in fixed_choices(current):
            score = matcher.match(choice.title)
            if score > 0:
                yield Hit(
                    score, Content(choice.title), self._command(choice), choice.title,
                    escape(choice.help),
                )  # fmt: skip

    def _current(self) -> SearchSettings:
        return cast("ChatApp", self.app).options.search

    def _command(self, choice: SearchChoice) -> partial[None]:
        return partial(switch_search, cast("ChatApp", self.app), choice.settings)
