"""The evaluation loop: every item, every method, every budget, results from the cache
where an earlier run left them.

A method whose model cannot be loaded here is reported as unavailable, with a notice, and
left out; nothing is silently replaced by another method.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag_chat.base.events import EventSink, Notice, Progress, ignore
from htmlrag_chat.eval.chunks import CHUNK_WORDS
from htmlrag_chat.eval.datasets import Item, QAItem, RetentionItem
from htmlrag_chat.eval.distractors import load_pool
from htmlrag_chat.eval.items import Distractors, Ready, describe, ready_qa, ready_retention, score
from htmlrag_chat.eval.methods import METHODS, Env, Method, model_names, unavailable_models
from htmlrag_chat.eval.metrics import html_text
from htmlrag_chat.eval.report import EvalReport
from htmlrag_chat.eval.stored import RESULTS, EvalCache, key_of


@dataclass(frozen=True)
class EvalSettings:
    task: str
    dataset: Path
    budgets: tuple[int, ...]
    methods: tuple[str, ...]
    k: int = 9
    distractors: str = "hard"
    seed: int = 0
    pool: Path | None = None  # default: the pages' folder
    pages: Path | None = None  # the folder page files are named from; default: the dataset's


@dataclass
class Counts:
    """Results (one per method, item and budget) a run computed and found in the cache."""

    computed: int = 0
    cached: int = 0


def evaluate(
    items: Sequence[Item],
    settings: EvalSettings,
    env: Env,
    cache: EvalCache,
    emit: EventSink = ignore,
) -> tuple[EvalReport, Counts]:
    """Evaluate every item; the report, and how many results came from the cache."""
    runnable, unavailable, missing = available_methods(settings.methods, env, emit)
    folder = settings.pages or settings.dataset.parent
    distractors = distractors_for(items, settings, cache, emit)
    counts = Counts()
    rows = []
    stage = f"eval {settings.task}"
    for done, item in enumerate(items, 1):
        if isinstance(item, RetentionItem):
            ready = ready_retention(item, cache)
        else:
            ready = ready_qa(item, distractors, cache)
        results = {
            method.name: _run_method(method, ready, settings, env, cache, counts, set(missing))
            for method in runnable
        }
        rows.append({**describe(settings.task, ready, folder, item), "results": results})
        emit(Progress(stage, done, len(items)))
    report = EvalReport(
        task=settings.task,
        budgets=settings.budgets,
        methods=tuple(method.name for method in runnable),
        items=rows,
        unavailable=unavailable,
        settings=_described(settings, env),
    )
    return report, counts


def available_methods(
    names: Sequence[str], env: Env, emit: EventSink
) -> tuple[list[Method], dict[str, str], dict[str, str]]:
    """The methods that can run here; why each other one cannot (with a notice); and why
    each model kind that did not load is missing (an optional one only changes results)."""
    methods = [METHODS[name] for name in names]
    kinds = {kind for method in methods for kind in (*method.models, *method.optional)}
    missing = unavailable_models(kinds, env)
    unavailable: dict[str, str] = {}
    for method in methods:
        reasons = [missing[kind] for kind in method.models if kind in missing]
        if reasons:
            unavailable[method.name] = "; ".join(reasons)
            emit(Notice(f"{method.name} is unavailable: {unavailable[method.name]}"))
    runnable = [method for method in methods if method.name not in unavailable]
    return runnable, unavailable, missing


def distractors_for(
    items: Sequence[Item], settings: EvalSettings, cache: EvalCache, emit: EventSink
) -> Distractors:
    """How single-page QA questions get their distractors: from the pool, loaded only when
    some item needs it."""
    if not any(isinstance(item, QAItem) and item.distractors for item in items):
        return Distractors(())
    pool = load_pool(settings.pool or settings.pages or settings.dataset.parent, cache, emit)
    return Distractors(pool, settings.k, settings.distractors, settings.seed)


def _run_method(
    method: Method,
    ready: Ready,
    settings: EvalSettings,
    env: Env,
    cache: EvalCache,
    counts: Counts,
    missing: set[str],
) -> dict[str, dict[str, Any]]:
    """One method's results on one item at every budget; only missing budgets are run."""
    models = model_names(method, env, missing)
    depends = (ready.key, method.name, env.counter.name, models, method.settings, env.code)
    keys = {budget: key_of(*depends, budget) for budget in settings.budgets}
    cached = {budget: cache.get(RESULTS, key) for budget, key in keys.items()}
    found = {budget: result for budget, result in cached.items() if result is not None}
    todo = [budget for budget in cached if budget not in found]
    counts.cached += len(settings.budgets) - len(todo)
    if todo:
        start = time.perf_counter()
        fit = method.prepare(env, ready.query, ready.pages)
        prepare_ms = (time.perf_counter() - start) * 1000
        for budget in todo:
            start = time.perf_counter()
            context = fit(budget).text
            ms = prepare_ms + (time.perf_counter() - start) * 1000
            text = html_text(context) if method.html else context
            result = {
                **score(settings.task, ready.facts, text),
                "tokens": env.counter.count(context),
                "ms": round(ms, 1),
            }
            cache.put(RESULTS, keys[budget], result)
            found[budget] = result
            counts.computed += 1
    return {str(budget): found[budget] for budget in settings.budgets}


def _described(settings: EvalSettings, env: Env) -> dict[str, Any]:
    """The settings the figures depend on, for the report (no times: a resumed run's
    report must equal an uninterrupted one's)."""
    described: dict[str, Any] = {
        "task": settings.task,
        "dataset": str(settings.dataset),
        "tokenizer": env.counter.name,
        "tokenizer_exact": env.counter.exact,
        "embed_model": env.embed_model,
        "gen_model": env.gen_model,
        "device": env.device,
        "chunk_words": CHUNK_WORDS,
        "code": env.code[:12],  # the fingerprint of the code that made the figures
    }
    if settings.task == "qa":
        described.update(
            pool=str(settings.pool or settings.pages or settings.dataset.parent),
            distractors=settings.distractors,
            k=settings.k,
            seed=settings.seed,
        )
    return described
