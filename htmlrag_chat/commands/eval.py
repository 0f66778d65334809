"""``eval``: how much of what a question needs survives each method at each budget."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.atomic import output_file
from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.base.events import Notice, stage
from htmlrag_chat.commands.common import (
    add_command,
    open_store,
    positive_int,
    progress_printer,
    store_options,
)
from htmlrag_chat.commands.evaluating import (
    ANSWER_METHODS,
    eval_settings,
    model_device,
    out_file,
    parse_budgets,
    parse_methods,
)
from htmlrag_chat.commands.options import add_setting_options, settings_of
from htmlrag_chat.eval.datasets import TASKS, load_dataset
from htmlrag_chat.eval.distractors import MODES
from htmlrag_chat.eval.methods import METHODS, Env
from htmlrag_chat.eval.report import dumps, markdown
from htmlrag_chat.eval.runner import evaluate
from htmlrag_chat.eval.stored import EvalCache
from htmlrag_chat.html.rendering import RENDERINGS
from htmlrag_chat.pruning.tokens import load_token_counter

if TYPE_CHECKING:
    pass

DEFAULT_BUDGETS = "512,1024,2048"
DEFAULT_RENDERINGS = "html,markdown"


def add_commands(commands: argparse._SubParsersAction) -> None:
    command = add_command(
        commands,
        "eval",
        "measure what cleaning and pruning keep, against plain-text and chunk baselines",
        run_eval,
        [store_options(argparse.SUPPRESS)],
        [
            ("htmlrag-chat eval retention retention.jsonl", "what cleaning and pruning keep"),
            ("htmlrag-chat eval qa qa.jsonl --limit 20 --budget 1024", "a quick QA check"),
            ("htmlrag-chat eval answers qa.jsonl --model X.gguf --out a.json.gz", "real answers"),
        ],
    )
    command.description = """\
retention: lines {url, file, with, without}, the page title as query; scores the share
  of `with` snippets kept (recall) and of `without` snippets kept (leakage).
qa: lines {id, question, answers, file}, mixed with --k distractor pages from --pool,
  or {id, question, answers, pages}; scores the share of questions whose gold answer
  is in the context, also per "lang" and per "location" when the lines carry them.
answers: the qa lines; each method's context (per --render, for HTML methods) goes to the
  reader (--reader, --model, ...) with the product's prompt; scores right answers,
  citations, "cannot answer", prompt tokens and seconds (docs/evaluation.md).
Prints Markdown tables (method x budget); --out writes the JSON report (gzip for .gz).
Results are kept in the cache file: a rerun resumes where an interrupted one stopped."""
    command.add_argument(
        "task", choices=(*TASKS, "answers"), help="what the dataset's lines hold (above)"
    )
    command.add_argument(
        "dataset", type=Path, metavar="DATASET.jsonl", help="one JSON object per line (above)"
    )
    command.add_argument(
        "--budget", dest="budgets", default=DEFAULT_BUDGETS, metavar="N,N,...",
        help=f"token budgets (default {DEFAULT_BUDGETS})",
    )  # fmt: skip
    command.add_argument(
        "--methods", metavar="M,M,...",
        help=f"methods to compare (default all: {', '.join(METHODS)}; answers: {ANSWER_METHODS})",
    )  # fmt: skip
    command.add_argument(
        "--render", dest="renderings", default=DEFAULT_RENDERINGS, metavar="R,R,...",
        help=f"answers: how HTML methods' contexts reach the reader, each in turn: "
        f"{', '.join(RENDERINGS)} (default {DEFAULT_RENDERINGS}); a list, not the --render "
        "setting of the other commands",
    )  # fmt: skip
    command.add_argument(
        "--prompts", default="product", metavar="P,P,...",
        help="answers: the prompts each context is read with: product (the answer's, as ask "
        "lays it out) and plain (one cited sentence, the sources, the question), each in turn",
    )  # fmt: skip
    command.add_argument("--limit", type=positive_int, metavar="N", help="the first N items only")
    command.add_argument(
        "--out", type=Path, metavar="FILE", help="write the JSON report to this file"
    )
    command.add_argument("--force", action="store_true", help="write over an existing --out file")
    command.add_argument(
        "--pages-dir", type=Path, metavar="DIR",
        help="folder the dataset's page files are named from (default: the dataset's)",
    )  # fmt: skip
    command.add_argument(
        "--pool", type=Path, metavar="DIR",
        help="qa: folder whose .html files are the distractor pool (default: the pages')",
    )  # fmt: skip
    command.add_argument(
        "--distractors", choices=MODES, default="hard",
        help="qa: the pool pages BM25 ranks highest for the question, or a seeded draw",
    )  # fmt: skip
    command.add_argument(
        "--k", type=int, default=9, help="qa: distractor pages per single-page question"
    )
    command.add_argument("--seed", type=int, default=0, help="qa: seed for draws and positions")
    add_setting_options(command, "eval")
    command.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )


def run_eval(args: argparse.Namespace) -> int:
    from htmlrag_chat.pruning.factory import PruneSettings

    if args.task == "answers":
        from htmlrag_chat.commands.answers import run_answers

        return run_answers(args)
    budgets = parse_budgets(args.budgets)
    prune = PruneSettings.of(settings_of(args))
    methods = parse_methods(args.methods or ",".join(METHODS))
    if args.k < 0:
        raise UserError(f"--k must be 0 or more: {args.k}")
    out_file(args)
    emit = progress_printer(args.progress or sys.stderr.isatty())
    items = load_dataset(args.task, args.dataset, args.limit, args.pages_dir)
    tokenizer = load_token_counter(prune.tokenizer)
    if tokenizer.notice:
        emit(Notice(tokenizer.notice))
    settings = eval_settings(args, args.task, budgets, methods)
    env = Env(tokenizer.counter, prune.embed_model, prune.gen_model, model_device(prune, methods))
    with open_store(args) as store, stage(emit, f"eval {args.task}", len(items)) as counts:
        report, done = evaluate(items, settings, env, EvalCache(store), emit)
        counts.update(computed=done.computed, cached=done.cached)
    print(markdown(report))
    if args.out is not None:
        with output_file(args.out, force=args.force) as file:
            file.write(dumps(report).encode("utf-8"))
    return EXIT_OK
