"""The answer evaluation loop: every item, method, rendering and budget, one reader call
each, the answers kept in the cache so that a rerun only reads what changed.

Contexts are made again on every run (about a second each); readings are what costs (tens
of seconds each on a CPU). So a reading is keyed by what the reader was given (the answer's
prompt messages: the question and the numbered sources), the reader (``reader_identity``:
for a GGUF file, the sha256 of its bytes), the longest answer, and the fingerprint of the
code that reads with this reader (``reading_roots``: the reading and its filters, the
reader's and its model's modules, the prompts; not another backend's). An edit to a
method or to pruning re-reads only the questions whose context it changed, and only at the
budgets where it changed it. Grades are not kept either: they are worked out again on every
run (``grading.py``, the evidence check included, from the answer's Markdown and the
sources' HTML), so a changed measure costs no model call. A run stopped at any point
resumes where it stopped.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from htmlrag_chat.agent.checking import Checker
from htmlrag_chat.agent.reading import Reader
from htmlrag_chat.base.events import EventSink, Progress, ignore
from htmlrag_chat.base.prompts import dated
from htmlrag_chat.base.sources import Source
from htmlrag_chat.eval.code import installed_fingerprint
from htmlrag_chat.eval.datasets import QAItem
from htmlrag_chat.eval.items import Ready, describe, ready_qa
from htmlrag_chat.eval.methods import Env, Method
from htmlrag_chat.eval.runner import Counts, EvalSettings, available_methods, distractors_for
from htmlrag_chat.eval.stored import EvalCache, key_of
from htmlrag_chat.eval_answers.contexts import PageInfo, numbered, page_infos
from htmlrag_chat.eval_answers.grading import grade
from htmlrag_chat.eval_answers.reading import (
    DAY,
    PRODUCT,
    given,
    read,
    reader_identity,
    reading_key,
)
from htmlrag_chat.eval_answers.report import AnswerReport
from htmlrag_chat.evidence.claims import check_answer
from htmlrag_chat.evidence.judging import BAND, pairs_of, uncertain
from htmlrag_chat.html.rendering import rendered_counter

ANSWERS = "eval-answers"  # the derived-artefact kind of answer records in the store
JUDGED = "eval-judged"  # the judge's verdict on one pair of an answer
# The reading and its filters; the reader that ran adds its own modules (``reading_roots``).
READING = "htmlrag_chat.eval_answers.reading"
STAGE = "eval answers"
# In a record for its grades, not in the report.
GRADING_ONLY = ("texts", "html", "markdown", "verdicts")


def reading_roots(reader: Reader) -> tuple[str, ...]:
    """The modules that make an answer from its prompt with ``reader`` (with all they import,
    the prompt layout and the prompts included): the reading, the reader's class and its
    model's. Another backend is not in it: an edit to how a transformers model is found on
    the hub re-reads no GGUF answer."""
    parts = (reader, reader.chat)
    return (READING, *sorted({type(part).__module__ for part in parts if part is not None}))


@dataclass(frozen=True)
class Cell:
    """A method in a rendering (an HTML method in each one asked for, a text method as
    text), read with a prompt: the product's, or the plain one it is measured against."""

    method: Method
    rendering: str
    prompt: str = PRODUCT

    @property
    def name(self) -> str:
        plain = "" if self.prompt == PRODUCT else f"+{self.prompt}"
        return f"{self.method.name}/{self.rendering}{plain}"


def cells_of(
    methods: Sequence[Method], renderings: Sequence[str], prompts: Sequence[str] = (PRODUCT,)
) -> list[Cell]:
    return [
        Cell(method, rendering, prompt)
        for method in methods
        for rendering in (renderings if method.html else ("text",))
        for prompt in prompts
    ]


async def evaluate_answers(
    items: Sequence[QAItem],
    settings: EvalSettings,
    renderings: Sequence[str],
    env: Env,
    reader: Reader,
    cache: EvalCache,
    emit: EventSink = ignore,
    checker: Checker | None = None,
    prompts: Sequence[str] = (PRODUCT,),
) -> tuple[AnswerReport, Counts]:
    """Answer every item's question from every cell's context at every budget; the report,
    and how many answers were read now and how many came from the cache. ``checker``'s
    judge (``ask``'s, for this reader) reads the sentences the check cannot decide."""
    checker = checker or Checker()
    runnable, unavailable, _ = available_methods(settings.methods, env, emit)
    cells = cells_of(runnable, renderings, prompts)
    folder = settings.pages or settings.dataset.parent
    distractors = distractors_for(items, settings, cache, emit)

    run = _Run(settings, env, reader, cache, emit, reader_identity(reader), checker)
    run.total = len(items) * len(cells) * len(settings.budgets)
    rows = []
    for item in items:
        ready = ready_qa(item, distractors, cache)
        infos = functools.cache(functools.partial(page_infos, ready.pages, folder))
        results = {}
        for cell in cells:
            records = await run.cell(cell, item, ready, infos)
            results[cell.name] = {
                str(budget): _shown(record, item) for budget, record in records.items()
            }
        row = {**describe("qa", ready, folder, item), "question": item.question}
        rows.append({**row, "answers": list(item.answers), "results": results})
    report = AnswerReport(
        budgets=settings.budgets,
        names=tuple(cell.name for cell in cells),
        items=rows,
        unavailable=unavailable,
        settings=_described(settings, renderings, env, run.identity, run.code),
    )
    return report, run.counts


@dataclass
class _Run:
    settings: EvalSettings
    env: Env
    reader: Reader
    cache: EvalCache
    emit: EventSink
    identity: dict[str, str]
    checker: Checker
    total: int = 0
    done: int = 0

    def __post_init__(self) -> None:
        self.counts = Counts()
        self.code = installed_fingerprint(reading_roots(self.reader))
        # What a reading depends on besides its prompt.
        self.depends = (self.identity, getattr(self.reader, "max_tokens", None), self.code)

    async def cell(
        self, cell: Cell, item: QAItem, ready: Ready, infos: Callable[[], list[PageInfo]]
    ) -> dict[int, dict[str, Any]]:
        """One cell's answers for one item at every budget; only missing ones are read."""
        env = self.env
        if cell.method.html:
            env = replace(env, counter=rendered_counter(env.counter, cell.rendering))
        fit = cell.method.prepare(env, ready.query, ready.pages)
        records = {}
        for budget in self.settings.budgets:
            context = fit(budget)
            sources = numbered(context, infos(), cell.method.html, cell.rendering)
            key = key_of(reading_key(item.question, sources, cell.prompt), *self.depends)
            reading = self.cache.get(ANSWERS, key)
            warm = reading is None  # the reader's state holds this answer's prompt
            if reading is None:
                reading = await read(self.reader, item.question, sources, cell.prompt)
                self.cache.put(ANSWERS, key, reading)
                self.counts.computed += 1
            else:
                self.counts.cached += 1
            tokens = env.counter.count(context.text)
            records[budget] = {**reading, **given(sources), "context_tokens": tokens}
            if self.checker.judge is not None and cell.prompt == PRODUCT:
                records[budget] |= await self.judged(item.question, sources, reading, key, warm)
            self.done += 1
            self.emit(Progress(STAGE, self.done, self.total))
        return records

    async def judged(
        self,
        question: str,
        sources: Sequence[Source],
        reading: dict[str, Any],
        key: str,
        warm: bool,
    ) -> dict[str, Any]:
        """The judge's verdicts on the pairs the check asks about in this answer (kept by
        pair, so a changed check asks only for the new ones), and the seconds they added
        (known where the reader's state held the answer's prompt, ``ask``'s case)."""
        claims = check_answer(question, reading["markdown"], sources, band=BAND)
        pairs = pairs_of(claims, uncertain(claims))
        keys = [key_of(JUDGED, key, pair.sentence, pair.passage, pair.source) for pair in pairs]
        found: dict[str, dict[str, Any]] = {}
        for k in keys:
            kept = self.cache.get(JUDGED, k)
            if kept is not None:
                found[k] = kept
        asked = [(k, pair) for k, pair in zip(keys, pairs, strict=True) if k not in found]
        if asked:
            started = time.perf_counter()
            with dated(DAY):
                verdicts = await self.checker.ask(
                    question, list(sources), (), reading["answer"], [pair for _, pair in asked]
                )
            # Each pair's share of the time, where the state held the answer (as in ask).
            share = (time.perf_counter() - started) / len(asked) if warm else None
            for (k, _), verdict in zip(asked, verdicts, strict=True):
                found[k] = {"p": verdict, "s": share}
                self.cache.put(JUDGED, k, found[k])
        seconds = [found[k].get("s") for k in keys]
        return {
            "verdicts": [
                {"sentence": pair.sentence, "passage": pair.passage, "source": pair.source}
                | {"p": found[k]["p"]}
                for k, pair in zip(keys, pairs, strict=True)
            ],
            "judge_s": None if None in seconds else round(sum(s or 0.0 for s in seconds), 3),
        }


def _shown(record: dict[str, Any], item: QAItem) -> dict[str, Any]:
    """An answer as the report shows it: the record and its grades, without what was kept
    for grading only (the sources' texts and HTML, the answer's Markdown; the report has
    what the reader got and said)."""
    shown = {key: value for key, value in record.items() if key not in GRADING_ONLY}
    return {**shown, **grade(record, item.question, item.answers, item.lang)}


def _described(
    settings: EvalSettings,
    renderings: Sequence[str],
    env: Env,
    identity: dict[str, str],
    code: str,
) -> dict[str, Any]:
    return {
        "task": "answers",
        "dataset": str(settings.dataset),
        "reader": identity,
        "tokenizer": env.counter.name,
        "renderings": list(renderings),
        "prompt_day": DAY,
        "embed_model": env.embed_model,
        "gen_model": env.gen_model,
        "device": env.device,
        "pool": str(settings.pool or settings.pages or settings.dataset.parent),
        "distractors": settings.distractors,
        "k": settings.k,
        "seed": settings.seed,
        "code": code[:12],
    }
