"""``eval answers``: each method's context read by a real reader, the answers scored.

The reader is planned and loaded as ``ask`` does it (``reader/registry.py``: ``--reader``,
``--model``, ``--base-url``; a reader named on purpose that cannot be had is an error), and
budgets count its own tokens (its backend's counter). Every budget must fit the reader's
window with the longest answer, or nothing runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from functools import partial

from htmlrag_chat.assembly.wiring import build_checker
from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.base.events import stage
from htmlrag_chat.commands.common import open_store, progress_printer
from htmlrag_chat.commands.evaluating import (
    ANSWER_METHODS,
    eval_settings,
    model_device,
    out_file,
    parse_budgets,
    parse_methods,
    parse_names,
)
from htmlrag_chat.commands.options import settings_of
from htmlrag_chat.eval.datasets import QAItem, load_dataset
from htmlrag_chat.eval.methods import Env
from htmlrag_chat.eval.stored import EvalCache
from htmlrag_chat.eval_answers.reading import PROMPTS
from htmlrag_chat.eval_answers.report import markdown, write_report
from htmlrag_chat.eval_answers.runner import STAGE, evaluate_answers
from htmlrag_chat.html.rendering import RENDERINGS
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.hub import unobtainable
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.pruning.tokens import token_counter
from htmlrag_chat.reader.backend import PROMPT_RESERVE
from htmlrag_chat.reader.registry import load_reader, look_around, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings


def run_answers(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    prune = PruneSettings.of(settings)
    budgets = parse_budgets(args.budgets)
    methods = parse_methods(args.methods or ANSWER_METHODS)
    renderings = parse_names(args.renderings, RENDERINGS, "--render", "rendering")
    prompts = parse_names(args.prompts, tuple(PROMPTS), "--prompts", "prompt")
    if args.k < 0:
        raise UserError(f"--k must be 0 or more: {args.k}")
    out_file(args)
    emit = progress_printer(args.progress or sys.stderr.isatty())
    items = [
        item
        for item in load_dataset("qa", args.dataset, args.limit, args.pages_dir)
        if isinstance(item, QAItem)
    ]
    reader_settings = ReaderSettings.of(settings.section("reader"))
    reader_settings = replace(reader_settings, device=pick_device(reader_settings.device))
    plan = plan_reader(reader_settings, look_around(reader_settings))
    plan, reader = load_reader(plan.looked_up(unobtainable(plan.hub_models)), emit)
    window = reader.chat.context_tokens if reader.chat is not None else None
    if window is not None and max(budgets) + reader_settings.max_tokens + PROMPT_RESERVE > window:
        raise UserError(
            f"--budget {max(budgets)} with the answer ({reader_settings.max_tokens} tokens) "
            f"and the prompt around the sources ({PROMPT_RESERVE}) is more than "
            f"{reader.name}'s context of {window} tokens: lower --budget or --max-tokens"
        )
    counting = partial(token_counter, prune.tokenizer, emit)
    counter = plan.backend.counter(reader, prune.tokenizer, counting)
    run = eval_settings(args, "answers", budgets, methods)
    env = Env(counter, prune.embed_model, prune.gen_model, model_device(prune, methods))
    checker = build_checker(reader_settings, reader, emit)  # ask's judge for this reader
    with open_store(args) as store, stage(emit, STAGE, len(items)) as counts:
        answering = evaluate_answers(
            items, run, renderings, env, reader, EvalCache(store), emit, checker, prompts
        )
        report, done = asyncio.run(answering)
        counts.update(read=done.computed, cached=done.cached)
    print(markdown(report))
    if args.out is not None:
        write_report(args.out, report, args.force)
    return EXIT_OK
