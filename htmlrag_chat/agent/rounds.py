"""A question's search rounds: its sources asked, their pages cleaned and pruned, and the
sufficiency check deciding whether another round runs.

Kept apart from the question loop (``agent/loop.py``), which decides what a question
searches for and reads the answer; here is how queries become numbered sources. Each round
asks every source (``sources/source.py``) for the round's queries, in the order they were
given (the user's own first), and prunes all they found so far as one document for the
question's topic. A page is cleaned once per question, and what pruning leaves of it is
kept (``Pruning.kept``): a second round cleans only the pages it adds (the ``clean`` stage
counts the others as ``kept``) and prunes them together with what round 1 left of the
others, not those pages whole: the topic and the budget are the question's, so a block
that did not fit among round 1's pages would not fit among more. Round 2's new pages still
compete with the old for the one budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from htmlrag_chat.agent.answer import numbered_sources
from htmlrag_chat.agent.plan import Plan
from htmlrag_chat.agent.planning import SidePlan
from htmlrag_chat.agent.research import Research
from htmlrag_chat.agent.worker import Worker
from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.base.events import EventSink, Notice, Searching, SourcesReady
from htmlrag_chat.base.sources import Source
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import Cleaned, PageInput, Stage, load_pages, prune_document
from htmlrag_chat.sources.source import Gathered, Gathering

# The sufficiency check of the sources so far: the query they miss, or None when enough.
Check = Callable[[list[Source]], Awaitable[str | None]]


@dataclass
class Pruning:
    """How one question's pages become numbered sources. ``kept``: each page it has seen,
    as the last round's pruning left it (or why it could not be cleaned), so that the next
    round cleans only its new pages and prunes them with what is left of the others."""

    stages: Sequence[Stage]
    counter: TokenCounter
    rendering: str  # how the reader gets the pages (``counter``'s)
    kept: Cleaned = field(default_factory=dict)

    def __call__(
        self, topic: str, inputs: list[PageInput], titles: dict[str, str], emit: EventSink
    ) -> tuple[list[Source], dict[str, str]]:
        """Every page found so far pruned for ``topic`` into numbered sources (thread
        side); also the pages that could not be cleaned, and why."""
        loaded = load_pages(inputs, emit, self.kept)
        unusable = {}
        for url, problem in loaded.failures.items():
            emit(Notice(f"page not used: {problem}"))
            unusable[url] = str(problem).removeprefix(f"{url}: ")
        if not loaded.document.pages:
            return [], unusable
        results = prune_document(loaded.document, topic, self.stages, self.counter, emit)
        pruned = results[-1].result.document
        sources = numbered_sources(pruned, titles, self.rendering)
        if not sources and visible_text(loaded.document.root):
            budget = self.stages[-1].budget
            emit(Notice(f"no block of the pages fits in the budget of {budget} tokens: no sources"))
        # The topic and the budget stay for the question's rounds: a block that did not fit
        # among these pages would not fit among more, so the next round starts from this.
        pairs = zip(pruned.pages, pruned.root, strict=True)
        self.kept.update((page.source, (page, html)) for page, html in pairs)
        return sources, unusable


@dataclass
class Rounds:
    """One question's rounds, into its record ``run``; ``check`` is the sufficiency check
    (None: no reader to ask, so one round)."""

    gatherings: list[Gathering]
    pruning: Pruning
    worker: Worker
    run: Research
    emit: EventSink
    check: Check | None = None

    async def search(
        self,
        topic: str,
        plan: Plan,
        why: str,
        rounds: int,
        side: SidePlan | None = None,
        follow_up: bool = False,
    ) -> None:
        """Rounds until the sources suffice or ``rounds`` run out; ``topic`` is what pages
        are pruned for. ``side``: the plan beside the first round, whose queries join it if
        they come by the time its pages are in; else it is stopped there. A ``follow_up``
        that found nothing new answers from the sources it already has: checking "no
        sources" would cost a prefill and push them out of the reader's cache."""
        run = self.run
        pending = plan.queries
        for number in range(1, rounds + 1):
            run.rounds = number
            await self._take(number, pending, why)
            if side is not None and number == 1:
                joining = side.in_time()
                await side.stop()  # a plan that has not replied yet would only delay
                if joining:  # it replied while the question's own pages came in
                    await self._take(number, joining, "sub-queries")
            await self.pruned(topic, [gathering.found for gathering in self.gatherings])
            if run.sources:
                self.emit(SourcesReady(tuple(run.sources)))
            if number == rounds or self.check is None or (follow_up and not run.sources):
                return
            missing = await self.check(run.sources)
            if missing is None or missing.casefold() in {q.casefold() for q in run.queries}:
                return
            pending, why = (missing,), f"missing: {missing}"

    async def _take(self, number: int, queries: Sequence[str], why: str) -> None:
        self.emit(Searching(number, tuple(queries), why))
        self.run.queries.extend(queries)
        for gathering in self.gatherings:
            await gathering.take(number, queries)

    async def pruned(self, topic: str, founds: list[Gathered]) -> None:
        """What ``founds`` hold, pruned for ``topic`` into the record: its sources, the
        queries skipped and the pages left out."""
        run = self.run
        pages: dict[str, PageInput] = {}  # a page two sources gave is read once, the first's
        titles: dict[str, str] = {}
        tried: dict[str, None] = {}
        failures: dict[str, str] = {}
        run.skipped, run.unrecorded = [], []
        for found in founds:
            for url, page in found.pages.items():
                pages.setdefault(url, page)
            titles.update(found.titles)
            tried.update(found.tried)
            failures.update(found.failures)
            run.skipped += found.skipped
            run.unrecorded += found.unrecorded
        run.sources = []
        if pages:
            run.sources, unusable = await self.worker.run(
                self.emit, self.pruning, topic, list(pages.values()), titles
            )
            failures.update(unusable)
        run.leave_out(tried, failures)
