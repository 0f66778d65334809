"""What a question's research did, as a record: the faces read it instead of progress events.

Progress events say what is happening while it happens; a face that rebuilt the outcome
from them (which queries were skipped, which pages left out) would have to know every
stage that can drop something, and repeat the work to learn what the events do not say.
The agent fills in this record as it goes and returns it (on its own for the context
tools, inside ``Answer`` for a question), so ``ask --json``, the chat app and the MCP
tools all report the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from htmlrag_chat.base.sources import Source
from htmlrag_chat.sources.source import Dropped

# A page that was fetched and cleaned, but of which pruning kept nothing for the query.
NOTHING_LEFT = "nothing in it matched the query well enough to fit the budget"


@dataclass
class Research:
    """What gathering did for one question or one context call.

    ``queries`` are those sent to the search, in order, those in ``skipped`` included;
    ``left_out`` are the pages fetched for it that are not among ``sources``, each with
    why (a failed or refused download, a page that could not be cleaned, or nothing in it
    fitting the budget), in the order they were tried. ``timings`` add up each stage's
    milliseconds over the rounds; ``notes`` are the notices said while it ran, once each.
    """

    sources: list[Source] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    skipped: list[Dropped] = field(default_factory=list)  # queries that gave no results
    unrecorded: list[str] = field(default_factory=list)  # skipped: not in a replay's recording
    left_out: list[Dropped] = field(default_factory=list)
    rounds: int = 0  # search rounds run (0: none, e.g. a follow-up needing no search)
    timings: dict[str, float] = field(default_factory=dict)  # stage -> ms
    notes: list[str] = field(default_factory=list)

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def leave_out(self, tried: Iterable[str], failures: Mapping[str, str]) -> None:
        """Set ``left_out`` from the URLs ``tried`` (in order): those not among the
        sources, with their failure when they had one, else ``NOTHING_LEFT``."""
        used = {source.url for source in self.sources}
        self.left_out = [
            Dropped(url, failures.get(url, NOTHING_LEFT)) for url in tried if url not in used
        ]
