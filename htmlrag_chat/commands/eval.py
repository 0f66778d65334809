"""``eval``: how much of what a question needs survives each method at each budget."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.atomic import check_replaceable, output_file
from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.base.events import Notice, stage
from htmlrag_chat.commands.common import (
    add_command,
    open_store,
    positive_int,
    progress_printer,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options, settings_of
from htmlrag_chat.eval.datasets import TASKS, load_dataset
from htmlrag_chat.eval.distractors import MODES
from htmlrag_chat.eval.methods import METHODS, Env
from htmlrag_chat.eval.report import dumps, markdown
from htmlrag_chat.eval.runner import EvalSettings, evaluate
from htmlrag_chat.eval.stored import EvalCache
from htmlrag_chat.html.rendering import RENDERINGS
from htmlrag_chat.pruning.tokens import load_token_counter

if TYPE_CHECKING:
    from htmlrag_chat.pruning.factory import PruneSettings

DEFAULT_BUDGETS = "512,1024,2048"
ANSWER_METHODS = "default,chunk-bm25,plain"  # what eval answers compares unless told
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


def eval_settings(
    args: argparse.Namespace, task: str, budgets: tuple[int, ...], methods: tuple[str, ...]
) -> EvalSettings:
    """The run's settings from the options every task shares."""
    return EvalSettings(
        task=task,
        dataset=args.dataset,
        budgets=budgets,
        methods=methods,
        k=args.k,
        distractors=args.distractors,
        seed=args.seed,
        pool=args.pool,
        pages=args.pages_dir,
    )


def out_file(args: argparse.Namespace) -> None:
    """``--out``'s folder made when missing, and the file checked before the work
    (``atomic.check_replaceable``: an existing file only with ``--force``, a regular file
    only); one line when it cannot be."""
    if args.out is None:
        return
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(f"{args.out}: cannot be written ({error.strerror})") from None
    check_replaceable(args.out, args.force)


def parse_budgets(text: str) -> tuple[int, ...]:
    """``512,1024`` -> (512, 1024): positive, without repeats, in increasing order."""
    try:
        budgets = {int(part) for part in text.split(",")}
    except ValueError:
        budgets = set()
    if not budgets or min(budgets) <= 0:
        raise UserError(f"--budget: not a comma-separated list of positive token counts: {text}")
    return tuple(sorted(budgets))


def parse_methods(text: str) -> tuple[str, ...]:
    """Method names in the order given, each once; UserError for an unknown one."""
    return parse_names(text, tuple(METHODS), "--methods", "method")


def parse_names(text: str, known: Sequence[str], option: str, kind: str) -> tuple[str, ...]:
    """``a,b`` -> ("a", "b"): names of ``known`` in the order given, each once; UserError
    naming ``option`` for an unknown one, or for none at all."""
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        named = ", ".join(unknown) if unknown else repr(text)
        raise UserError(f"{option}: unknown {kind} {named} (known: {', '.join(known)})")
    return names


def model_device(prune: PruneSettings, methods: tuple[str, ...]) -> str:
    """The device models run on; torch is imported only when a method uses a model."""
    if not any(METHODS[name].models for name in methods):
        return prune.device
    from htmlrag_chat.modelio.device import pick_device

    return pick_device(prune.device)
