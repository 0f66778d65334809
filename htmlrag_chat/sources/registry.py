"""The sources the user names, beside the web, in the order each round asks them: the
documents (``--docs``), then saved pages (``--saved``); the web comes after them all.

Each is declared in its own module (a ``source.SourceEntry``: its setting, its check, how it
is built, its name in words), and everything else reads this list: the settings tree (their
settings are drawn in here, before the web's switch, whose help names them), the assembly
(``wiring.page_sources``, ``wiring.check_sources`` and its "nothing to read" error), and the
chat app's words (``tui/texts.py``). A new source is a module and one line in ``SOURCES``,
or one call of ``register``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from htmlrag_chat.settings.tree import declare
from htmlrag_chat.sources.library import DOCUMENTS
from htmlrag_chat.sources.saved import SAVED
from htmlrag_chat.sources.source import SourceEntry

SOURCES: list[SourceEntry] = [
    DOCUMENTS,
    SAVED,
]
WEB_SWITCH = "research.web"  # the web's own setting: the sources' are listed before it


def register(*entries: SourceEntry) -> None:
    """Make ``entries`` sources the user can name: their settings drawn into the tree (the
    options, the file's checks, ``config``), each listed after those already here."""
    for entry in entries:
        if entry.setting.section != "research":  # ``AgentOptions`` reads them from there
            raise ValueError(f"a source's setting belongs in [research]: {entry.setting.key}")
        declare(entry.setting, before=WEB_SWITCH)
        if entry not in SOURCES:
            SOURCES.append(entry)


register(*SOURCES)


def named(value_of: Callable[[str], Any]) -> list[tuple[SourceEntry, Any]]:
    """The sources the settings name (``value_of``: a setting's value by name), each with
    its value, in the order each round asks them."""
    return [(entry, value) for entry in SOURCES if (value := value_of(entry.name))]


def nothing_to_read() -> str:
    """What ``--no-web`` without any source named is told: how to name each."""
    ways = " or ".join(
        f"{entry.called} with {entry.setting.option} {entry.setting.kind.metavar}"
        for entry in SOURCES
    )
    return f"--no-web leaves nothing to read: give {ways}"
