"""Search controls from the command palette, drawn from the settings tree like the options.

Each search setting the chat app takes as an option (``settings/tree.py``) is a palette
command named as its option is (``Search: site example.org`` is ``--site example.org``,
``Search: exclude-site``, ``region``, ``backends``, ``searxng-url``, ``proxy``), its value
read and checked by the setting's kind, its help the setting's; settings with a fixed set
of values (``time``, ``safesearch``) are listed with each value, and a changed setting
can go back to its default. A new setting of the ``search`` section is in the palette
with no code here.

What the palette sets holds for the questions that follow in this conversation (the config
file is not touched; a new chat goes back to the settings the app started with): the agent
searches with it from the next question on (``Agent.search_with``), with no reload of the
models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content
from textual.markup import escape

from htmlrag_chat.settings.tree import Setting, for_command
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:
    from htmlrag_chat.tui.app import ChatApp

PREFIX = "Search:"
# The search settings the chat app takes as options, in the tree's order.
PALETTE = [setting for setting in for_command("chat") if setting.section == "search"]


def word(setting: Setting) -> str:
    """The setting's name in the palette: its option's (``exclude-site``)."""
    return setting.option.removeprefix("--")


def shown(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "none"
    return "none" if value is None else str(value)


@dataclass(frozen=True)
class SearchChoice:
    title: str  # what the palette lists
    help: str
    settings: SearchSettings  # the search settings it sets


def _choice(current: SearchSettings, setting: Setting, value: object) -> SearchChoice:
    # ``value`` is of the setting's kind, which the settings tree declares for this field:
    # a link by name that no type can state, hence Any.
    change: dict[str, Any] = {setting.name: value}
    settings = replace(current, **change)
    return SearchChoice(f"{PREFIX} {word(setting)} {shown(value)}", setting.help, settings)


def fixed_choices(current: SearchSettings) -> list[SearchChoice]:
    """The palette's search commands that need no typed value (and, for those that do, a
    line saying what to type)."""
    choices = []
    for setting in PALETTE:
        value = getattr(current, setting.name)
        options = setting.kind.choices or ()
        choices += [_choice(current, setting, option) for option in options if option != value]
        if not options:
            usage = f"{PREFIX} {word(setting)} {setting.kind.metavar}"
            choices.append(SearchChoice(usage, f"Type it: {setting.described}", current))
        if value != setting.default and setting.default not in options:
            default = _choice(current, setting, setting.default)
            choices.append(replace(default, title=f"{default.title} (default)"))
    return choices


def typed_choice(current: SearchSettings, query: str) -> SearchChoice | None:
    """The command a typed ``site example.org`` (``NAME VALUE``, as the option would be
    given) stands for, or None; a repeatable setting's value adds to the current one."""
    words = query.strip().removeprefix(PREFIX).split()
    if len(words) != 2:
        return None
    named = {word(setting): setting for setting in PALETTE}
    setting = named.get(words[0].rstrip(":").lower())
    if setting is None:
        return None
    try:
        value = setting.kind.parse(words[1])
    except ValueError:
        return None
    if isinstance(value, tuple) and setting.kind.repeatable:
        value = tuple(dict.fromkeys(getattr(current, setting.name) + value))
    return _choice(current, setting, value)


def switch_search(app: ChatApp, settings: SearchSettings) -> None:
    """Search with ``settings`` from the next question on: the app's options hold them,
    and the agent is handed them when it is asked (``ChatApp.answer``)."""
    app.options = replace(app.options, search=settings)
    app.notify(describe(settings), title="Search")


def describe(settings: SearchSettings) -> str:
    """The search settings in one line, for the notification: the backends, then every
    setting that is not at its default."""
    parts = [shown(settings.backends)]
    for setting in PALETTE:
        value = getattr(settings, setting.name)
        if setting.name != "backends" and value != setting.default:
            parts.append(f"{word(setting)} {shown(value)}")
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
