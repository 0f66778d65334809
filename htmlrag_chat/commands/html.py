"""``clean`` and ``prune``: the HTML core and the pruning stages on local files."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.atomic import check_output, write_text
from htmlrag_chat.base.errors import EXIT_INPUT, EXIT_OK, InputError, UserError
from htmlrag_chat.base.events import Event, EventSink, Notice, StageFinished
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.base.safety import text_safe
from htmlrag_chat.commands.common import (
    add_command,
    check_encoding,
    error,
    open_store,
    progress_printer,
    read_input,
    store_options,
)
from htmlrag_chat.commands.options import add_setting_options, settings_of
from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.html.rendering import render, rendered_counter
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import Stage, clean_page, load_pages, prune_document
from htmlrag_chat.pruning.tokens import load_token_counter

if TYPE_CHECKING:
    from htmlrag_chat.pruning.factory import PruneSettings


def add_commands(commands: argparse._SubParsersAction) -> None:
    clean = add_command(
        commands, "clean", "clean HTML files (query-independent)", run_clean,
        examples=[("htmlrag-chat clean page.html", "the cleaned HTML on stdout"),
                  ("htmlrag-chat clean --out-dir cleaned *.html", "one cleaned file per input")],
    )  # fmt: skip
    clean.add_argument("files", nargs="+", metavar="FILE", help="HTML files to clean")
    clean.add_argument("--out-dir", type=Path, help="write one cleaned file per input here")
    clean.add_argument("--encoding", help="charset of the inputs (default: detect)")

    prune = add_command(
        commands, "prune", "prune HTML files to a token budget for a query", run_prune,
        [store_options(argparse.SUPPRESS)],
        [("htmlrag-chat prune -q 'Who designed it?' --budget 512 page.html", "what ask keeps"),
         ("htmlrag-chat prune -q 'tallest tower' --pruner bm25 --stats *.html", "BM25 alone")],
    )  # fmt: skip
    prune.add_argument("files", nargs="+", metavar="FILE", help="HTML files, pruned together")
    prune.add_argument(
        "--query", "-q", required=True, metavar="QUESTION",
        help="the question the pages must answer",
    )  # fmt: skip
    add_setting_options(prune, "prune")
    prune.add_argument("--encoding", help="charset of the inputs (default: detect)")
    prune.add_argument("--stats", action="store_true", help="print a JSON line of stats to stderr")
    prune.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )


def run_clean(args: argparse.Namespace) -> int:
    names = [Path(file).name for file in args.files]
    if args.out_dir is None and len(args.files) > 1:
        raise UserError("several inputs need --out-dir (one cleaned file per input)")
    if len(set(names)) < len(names):
        raise UserError("inputs share a file name; --out-dir would overwrite one with another")
    check_encoding(args.encoding)
    if args.out_dir is not None:
        prepare_out_dir(args.out_dir)
        for name in names:  # before anything is written: an input is never overwritten
            check_output(args.out_dir / name, args.files)
    failed = False
    for file, name in zip(args.files, names, strict=True):
        try:
            _, html = clean_page(read_input(file, args.encoding))
        except InputError as failure:
            error(str(failure))
            failed = True
            continue
        if not visible_text(html):
            error(f"note: {shown_path(file)}: no visible text: the result is empty")
        text = text_safe(serialize(html)) + "\n"
        if args.out_dir is None:
            sys.stdout.write(text)
        else:
            write_text(args.out_dir / name, text, args.files)
    return EXIT_INPUT if failed else EXIT_OK


def prepare_out_dir(folder: Path) -> None:
    """Create ``--out-dir`` before any input is read, so that a file in its place or a
    folder we may not write to is one usage error, not a traceback after the first page."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--out-dir {shown_path(folder)}: not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as failure:
        raise UserError(f"--out-dir {shown_path(folder)}: {failure.strerror or failure}") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"--out-dir {shown_path(folder)}: not writable")


def run_prune(args: argparse.Namespace) -> int:
    from htmlrag_chat.modelio.device import pick_device
    from htmlrag_chat.pruning.factory import PruneSettings
    from htmlrag_chat.settings.tree import BUDGET

    settings = PruneSettings.of(settings_of(args))
    settings = replace(settings, device=pick_device(settings.device))
    if settings.budget is None:  # no reader here to choose by
        settings = replace(settings, budget=BUDGET)
    show = progress_printer(args.progress or sys.stderr.isatty())
    stage_ms: dict[str, float] = {}

    def emit(event: Event) -> None:
        if isinstance(event, StageFinished):
            stage_ms[event.stage] = round(event.ms, 2)
        show(event)

    check_encoding(args.encoding)
    inputs, failures = [], []
    for file in args.files:
        try:
            inputs.append(read_input(file, args.encoding))
        except InputError as unread:
            failures.append(unread)
    loaded = load_pages(inputs, emit)
    failures.extend(loaded.failures.values())
    for failure in failures:
        error(str(failure))

    tokenizer = load_token_counter(settings.tokenizer)
    if tokenizer.notice:
        emit(Notice(tokenizer.notice))
    counter = rendered_counter(tokenizer.counter, settings.render)  # what the reader gets
    with ExitStack() as resources:
        stages = prune_stages(args, settings, resources, emit)
        results = prune_document(loaded.document, args.query, stages, counter, emit)
    html = render(results[-1].result.document.to_html(), settings.render)
    if html:
        sys.stdout.write(text_safe(html) + "\n")
    elif visible_text(loaded.document.root):
        emit(Notice(f"no block fits in {settings.budget} tokens: the result is empty"))
    elif inputs and len(failures) < len(args.files):
        emit(Notice("no visible text in the input: the result is empty"))
    if args.stats:
        first, last = results[0].result, results[-1].result
        stats: dict[str, object] = {
            "pages": len(loaded.document.pages),
            "failed": len(failures),
            "blocks": first.blocks,
            "blocks_kept": len(last.kept),
            "tokens_before": first.tokens_before,
            "tokens_after": last.tokens_after,
            "budget": settings.budget,
            "tokenizer": tokenizer.counter.name,
            "tokenizer_exact": tokenizer.counter.exact,
            "tokenizer_notice": tokenizer.notice,
        }
        for stage_result in results:  # model costs (prompt_tokens, forward_calls, ...)
            stats.update(stage_result.counts)
        stats["stages"] = [
            {
                "scorer": r.name,
                "budget": r.budget,
                "max_words": r.max_words,
                "blocks": r.result.blocks,
                "blocks_kept": len(r.result.kept),
                "tokens_before": r.result.tokens_before,
                "tokens_after": r.result.tokens_after,
                **r.counts,
            }
            for r in results
        ]
        stats["ms"] = stage_ms
        print(json.dumps(stats, ensure_ascii=False), file=sys.stderr)
    return EXIT_INPUT if failures else EXIT_OK


def prune_stages(
    args: argparse.Namespace, settings: PruneSettings, resources: ExitStack, emit: EventSink
) -> list[Stage]:
    """The stages of the recipe the options name (``pruning.factory.build_recipe``, as
    ``ask``); the embedding stage keeps its block embeddings in the cache file."""
    from htmlrag_chat.pruning.factory import build_recipe, plan_alone

    cache = None
    if settings.pruner != "bm25":
        from htmlrag_chat.store.embeddings import embeddings_for

        cache = embeddings_for(resources.enter_context(open_store(args)))
    assert settings.budget is not None, "run_prune gave it one"
    return build_recipe(plan_alone(settings), emit, cache).stages(settings.budget)
