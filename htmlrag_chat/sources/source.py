"""What a source of pages is to the agent: one seam for the web, the user's documents and
any other place pages come from.

The agent asks each of its sources, in order, for the pages of a round's queries, and
prunes what they all give as one document; it never asks which kind of source it holds.
A source opens one ``Gathering`` per question (``gather``): the question's rounds are
taken through it, so a source that must remember something between rounds (the URLs the
web fetched already, the results a late sub-query shares a round with) keeps it there,
and what it holds for the question so far is its ``found``, a ``Gathered``. The
question's side of it is ``Asking``: where events go, how many pages a round reads, the
deadline, whether other sources answer too, and the question's worker thread for blocking
work.

A source the user names (``--docs``, ``--saved``) declares, in its own module, a
``SourceEntry``: its setting, how its value is checked, how it is built, its name in words;
``sources/registry.py`` lists them, and the assembly, the options, the chat app's words and
the "nothing to read" error read that list. ``sources/saved.py`` is one made this way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from htmlrag_chat.base.events import EventSink
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.settings.tree import Setting
from htmlrag_chat.web.settings import SearchSettings

if TYPE_CHECKING:
    from htmlrag_chat.store.db import Store

T = TypeVar("T")


@dataclass(frozen=True)
class Dropped:
    """A query or a page that gave the sources nothing, and why."""

    what: str  # the query, or the page's URL
    reason: str


class Threaded(Protocol):
    """The question's worker thread (``agent/worker.py``): ``work(*args, emit)`` run off the
    event loop, stopped with the question, its events delivered in order."""

    def __call__(self, work: Callable[..., T], *args: Any) -> Awaitable[T]: ...


@dataclass(frozen=True)
class Asking:
    """One question as its sources see it."""

    emit: EventSink  # the question's events (its record keeps the notices)
    pages: int  # pages a round reads, from each source
    deadline: float | None  # seconds after the first page (the web's downloads)
    alone: bool  # no other source answers: a search that fails fails the question
    thread: Threaded


@dataclass
class Gathered:
    """What one source holds for a question so far, over its rounds.

    ``pages`` are in the order they came, each once; ``tried`` are the URLs it looked at
    that count as left out when pruning keeps nothing of them (a web page fetched; not a
    document that was not chosen), with ``failures`` saying why one gave no page.
    ``skipped`` are its queries that gave nothing, and ``unrecorded`` those a replay does
    not hold."""

    pages: dict[str, PageInput] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)  # a search result's, by URL
    tried: dict[str, None] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    skipped: list[Dropped] = field(default_factory=list)
    unrecorded: list[str] = field(default_factory=list)


class Gathering(Protocol):
    """One question's use of a source: its rounds taken in turn, and what they found."""

    @property
    def found(self) -> Gathered: ...

    async def take(self, round: int, queries: Sequence[str]) -> None:
        """``queries`` looked up for round ``round``; taken again with the same number,
        more queries join that round (a plan's sub-queries that came late)."""
        ...


class Finder(Protocol):
    """A source that chooses its pages for a round's queries on its own, blocking."""

    def find(self, queries: Sequence[str], limit: int, emit: EventSink) -> list[PageInput]: ...


@dataclass
class Chosen:
    """One question's use of a ``Finder`` (the documents, saved pages): each round's pages
    chosen for its own queries in the question's thread, and kept for the rounds after."""

    source: Finder
    asking: Asking
    found: Gathered = field(default_factory=Gathered)

    async def take(self, round: int, queries: Sequence[str]) -> None:
        chosen = await self.asking.thread(self.source.find, queries, self.asking.pages)
        for page in chosen:
            self.found.pages.setdefault(page.source, page)


class PageSource:
    """A place pages come from. A subclass says its ``name`` (in the research cache's key
    and the docs) and whether it reaches the ``network``, and opens a ``Gathering`` per
    question; the rest has defaults for a source with no search settings, no downloads
    left running and no page fetched by its address."""

    name: ClassVar[str]
    network: ClassVar[bool] = False

    def gather(self, asking: Asking) -> Gathering:
        raise NotImplementedError

    def key(self) -> object:
        """What of this source changes an answer (the research cache's key: a part is
        asked again when it changed)."""
        return None

    def search_with(self, settings: SearchSettings) -> None:
        """Search with ``settings`` from the next question on (the chat app's palette)."""

    async def settle(self, timeout: float) -> int:
        """Give work a question left behind up to ``timeout`` seconds to end before the
        program exits; how many pages were still missing then."""
        return 0

    async def page(self, url: str, asking: Asking) -> Gathered | None:
        """The page at ``url`` alone (the MCP server's ``page_context``), or None when
        this source fetches no page by its address."""
        return None


def interleaved(rankings: Sequence[Sequence[int]], limit: int) -> list[int]:
    """The first ``limit`` of several rankings of the same items taken a rank at a time
    (each query's best, then each one's second...), each item once: how a local source
    shares a round's pages among its queries, as the web shares its results."""
    chosen: list[int] = []
    for rank in range(max(map(len, rankings), default=0)):
        for ranking in rankings:
            if rank < len(ranking) and ranking[rank] not in chosen:
                chosen.append(ranking[rank])
    return chosen[:limit]


@dataclass(frozen=True)
class SourceEntry:
    """A source the user names with a setting, as its module declares it for
    ``sources/registry.py``: the setting (in ``[research]``: its option, file key, variable,
    help and example), its name in words, how a value is checked before any model loads,
    and how the source is built for a question on the cache file."""

    setting: Setting
    called: str  # what it is to a person, in the welcome and the errors: "your documents"
    listed: str  # its name in the chat app's mode line: "documents"
    check: Callable[[Any], object]  # the value named and readable, else an ``InputError``
    build: Callable[[Any, Store], PageSource]  # the source a question reads, on the store

    @property
    def name(self) -> str:
        return self.setting.name
