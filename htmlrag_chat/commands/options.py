"""The options of each command, generated from the settings tree (``settings/tree.py``).

A command gets ``--name`` for exactly the settings that list it, grouped by section, with
the setting's help and default, its kind as the argparse type (so ``--device banana`` is
refused while the line is parsed, before any work) and its choices for shell completion.
Every option's default is ``argparse.SUPPRESS``: a value given before the command name
(where the chat app's options sit) is never overwritten by the command's own copy, and an
option not given is simply absent, so ``settings_of`` leaves the file and the environment
in charge of it.

The tree holds the program's own settings and those its registrations declare (each search
engine's key: ``web/engines.py``; a reader backend's own: ``reader/registry.py``; each
source the user names: ``sources/registry.py``), so this
module imports those tables: every command reads its settings through here, and so sees the
whole tree.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from htmlrag_chat.commands.common import replaying
from htmlrag_chat.reader import registry
from htmlrag_chat.settings.layered import CONFIG_ENV, Resolved, resolve
from htmlrag_chat.settings.tree import SETTINGS, Setting, for_command
from htmlrag_chat.sources import registry as sources
from htmlrag_chat.web import engines

# The tables whose entries declare settings (see above).
REGISTRATIONS = (engines, registry, sources)

if TYPE_CHECKING:
    from htmlrag_chat.assembly.wiring import AgentOptions


def add_setting_options(parser: argparse.ArgumentParser, command: str) -> None:
    """``--config`` and the options of the settings ``command`` takes."""
    groups: dict[str, argparse._ArgumentGroup] = {}
    for setting in for_command(command):
        group = groups.get(setting.section)
        if group is None:
            group = groups[setting.section] = parser.add_argument_group(setting.section)
        short = [] if setting.short is None else [setting.short]
        flags = [*short, setting.option, *setting.aliases]
        group.add_argument(
            *flags, dest=setting.name, default=argparse.SUPPRESS, help=_help(setting),
            **_how_given(setting),
        )  # fmt: skip
    add_config_option(parser)


def add_config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, default=argparse.SUPPRESS, metavar="FILE",
        help=f"the settings file (default ${CONFIG_ENV}, else config.toml in the user config "
        "directory: htmlrag-chat config path)",
    )  # fmt: skip


def settings_of(args: argparse.Namespace) -> Resolved:
    """The settings in effect: the defaults, the file, the environment, then the options
    given on this command line."""
    options = {setting.name: getattr(args, setting.name, None) for setting in SETTINGS}
    for setting in SETTINGS:  # a repeated option: one value per time it was given
        times = options[setting.name]
        if setting.kind.repeatable and times is not None:
            options[setting.name] = tuple(v for given in times for v in given)
    return resolve(getattr(args, "config", None), options)


def agent_options(args: argparse.Namespace, settings: Resolved | None = None) -> AgentOptions:
    """The settings in effect (``settings``, when already resolved) as the agent's (``ask``,
    the chat app, ``models``, ``mcp``)."""
    from htmlrag_chat.assembly.wiring import AgentOptions

    refresh = getattr(args, "refresh", None)
    return AgentOptions.of(settings or settings_of(args), replay=replaying(args), refresh=refresh)


class _HowGiven(TypedDict, total=False):
    """The keyword arguments of ``add_argument`` that depend on the setting's kind."""

    action: str | type[argparse.Action]
    choices: Sequence[str]
    type: Callable[[str], object]
    metavar: str


def _how_given(setting: Setting) -> _HowGiven:
    """argparse's action and value for the setting's kind: ``--web``/``--no-web`` for a
    switch, one value per time for a repeatable option, else one value of its kind."""
    kind = setting.kind
    if kind.switch:
        return {"action": argparse.BooleanOptionalAction}
    action = "append" if kind.repeatable else "store"
    if kind.choices:
        return {"action": action, "choices": kind.choices}
    return {"action": action, "type": _argument_type(setting), "metavar": kind.metavar}


def _help(setting: Setting) -> str:
    if setting.default in (None, ()):  # nothing to show: how it is found, if anything
        return setting.described
    default = setting.default
    if setting.kind.switch:
        return f"{setting.help} (default {'on' if default else 'off'})"
    shown = (
        ",".join(default)
        if isinstance(default, tuple)
        else f"{default:g}"
        if isinstance(default, float)
        else default
    )
    return f"{setting.described} (default {shown})"


def _argument_type(setting: Setting) -> Callable[[str], object]:
    """The setting's kind as an argparse type: its error becomes argparse's one line."""

    def parse(text: str) -> object:
        try:
            return setting.kind.parse(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.__name__ = setting.name  # argparse names the type in its message
    return parse
