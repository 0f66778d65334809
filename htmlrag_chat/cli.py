"""The ``htmlrag-chat`` command line.

Every failure a user can cause is one line on stderr and a documented exit code
(``errors.py``); only ``HTMLRAG_CHAT_DEBUG=1`` shows tracebacks. Results go to stdout,
progress and notices to stderr, so output can be piped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from htmlrag_chat import __version__
from htmlrag_chat.errors import EXIT_INPUT, EXIT_INTERNAL, EXIT_OK, InputError, UserError
from htmlrag_chat.events import Event, EventSink, Notice, StageFinished, StageStarted
from htmlrag_chat.html.blocks import DEFAULT_MAX_WORDS, serialize
from htmlrag_chat.pipeline import PageInput, Stage, clean_page, load_pages, prune_document
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, DEFAULT_GEN_MODEL, BlockScorer
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.tokens import DEFAULT_TOKENIZER, load_token_counter

PROG = "htmlrag-chat"
MAX_INPUT_BYTES = 64 * 1024 * 1024
FINE_MAX_WORDS = 128  # the generative stage's granularity in the paper


EPILOG = """exit codes:
  0  success (an input with no visible text gives an empty result and a notice)
  1  internal error (set HTMLRAG_CHAT_DEBUG=1 for a traceback)
  2  usage error
  3  an input could not be used (missing, binary, too large, unknown encoding);
     the other inputs were still processed
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except UserError as error:
        _error(str(error))
        return error.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (e.g. `| head`): not an error of ours.
        sys.stderr.close()
        return EXIT_OK
    except Exception as error:
        if os.environ.get("HTMLRAG_CHAT_DEBUG"):
            raise
        _error(f"internal error: {type(error).__name__}: {error} (HTMLRAG_CHAT_DEBUG=1 shows more)")
        return EXIT_INTERNAL


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Local web-search answers from pruned HTML (HtmlRAG).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    clean = _command(commands, "clean", "clean HTML files (query-independent)", run_clean)
    clean.add_argument("files", nargs="+", metavar="FILE")
    clean.add_argument("--out-dir", type=Path, help="write one cleaned file per input here")
    clean.add_argument("--encoding", help="charset of the inputs (default: detect)")

    prune = _command(commands, "prune", "prune HTML files to a token budget for a query", run_prune)
    prune.add_argument("files", nargs="+", metavar="FILE")
    prune.add_argument("--query", "-q", required=True, help="the question the pages must answer")
    prune.add_argument("--budget", type=_positive_int, required=True, help="token budget")
    prune.add_argument(
        "--scorer",
        choices=["bm25", "embed", "gen", "two-stage"],
        default="bm25",
        help="block scorer: BM25, embedding similarity, generative path probability, or "
        "HtmlRAG's two stages (embed to --coarse-budget, then gen to --budget)",
    )
    prune.add_argument(
        "--max-words",
        type=_positive_int,
        help="words per block of the (last) stage (default 256, two-stage: 128)",
    )
    prune.add_argument(
        "--coarse-budget", type=_positive_int, help="two-stage: budget of the embedding stage "
        "(default twice --budget)",
    )  # fmt: skip
    prune.add_argument(
        "--coarse-max-words", type=_positive_int, default=DEFAULT_MAX_WORDS,
        help=f"two-stage: words per block of the embedding stage (default {DEFAULT_MAX_WORDS})",
    )  # fmt: skip
    prune.add_argument(
        "--embed-model", default=DEFAULT_EMBED_MODEL,
        help=f"sentence-transformers id or path (default {DEFAULT_EMBED_MODEL}, bundled)",
    )  # fmt: skip
    prune.add_argument(
        "--gen-model", default=DEFAULT_GEN_MODEL,
        help=f"causal LM id or path for generative scores (default {DEFAULT_GEN_MODEL})",
    )  # fmt: skip
    prune.add_argument(
        "--device", default="auto", help="auto (cuda, then mps, then cpu), cpu, cuda, mps"
    )
    prune.add_argument(
        "--tokenizer",
        help=f"tokenizer path or hub id for counting (default {DEFAULT_TOKENIZER}; 'approx' "
        "for the built-in approximation, also used when the tokenizer cannot be loaded)",
    )
    prune.add_argument("--encoding", help="charset of the inputs (default: detect)")
    prune.add_argument("--stats", action="store_true", help="print a JSON line of stats to stderr")
    prune.add_argument(
        "--progress", action="store_true", help="show progress on stderr even when not a terminal"
    )
    return parser


def _command(
    commands: argparse._SubParsersAction, name: str, summary: str, handler: object
) -> argparse.ArgumentParser:
    command = commands.add_parser(
        name, help=summary, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    command.set_defaults(handler=handler)
    return command


def run_clean(args: argparse.Namespace) -> int:
    names = [Path(file).name for file in args.files]
    if args.out_dir is None and len(args.files) > 1:
        raise UserError("several inputs need --out-dir (one cleaned file per input)")
    if len(set(names)) < len(names):
        raise UserError("inputs share a file name; --out-dir would overwrite one with another")
    failed = False
    for file, name in zip(args.files, names, strict=True):
        try:
            _page, html = clean_page(read_input(file, args.encoding))
        except InputError as error:
            _error(str(error))
            failed = True
            continue
        text = serialize(html) + "\n"
        if args.out_dir is None:
            sys.stdout.write(text)
        else:
            args.out_dir.mkdir(parents=True, exist_ok=True)
            (args.out_dir / name).write_text(text, encoding="utf-8")
    return EXIT_INPUT if failed else EXIT_OK


def run_prune(args: argparse.Namespace) -> int:
    show = _progress_printer(args.progress or sys.stderr.isatty())
    stage_ms: dict[str, float] = {}

    def emit(event: Event) -> None:
        if isinstance(event, StageFinished):
            stage_ms[event.stage] = round(event.ms, 2)
        show(event)

    inputs, failures = [], []
    for file in args.files:
        try:
            inputs.append(read_input(file, args.encoding))
        except InputError as error:
            failures.append(error)
    loaded = load_pages(inputs, emit)
    failures.extend(loaded.failures)
    for error in failures:
        _error(str(error))

    tokenizer = load_token_counter(args.tokenizer)
    if tokenizer.notice:
        emit(Notice(tokenizer.notice))
    stages = prune_stages(args)
    results = prune_document(loaded.document, args.query, stages, tokenizer.counter, emit)
    html = results[-1].result.document.to_html()
    if html:
        sys.stdout.write(html + "\n")
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
            "budget": args.budget,
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


def prune_stages(args: argparse.Namespace) -> list[Stage]:
    """The pruning stages the options ask for; model scorers are imported only when used."""
    if args.scorer == "bm25":
        return [Stage(BM25Scorer(), args.budget, args.max_words or DEFAULT_MAX_WORDS)]
    if args.scorer == "embed":
        return [Stage(_embedder(args), args.budget, args.max_words or DEFAULT_MAX_WORDS)]
    if args.scorer == "gen":
        return [Stage(_generator(args), args.budget, args.max_words or DEFAULT_MAX_WORDS)]
    coarse = args.coarse_budget or 2 * args.budget
    return [
        Stage(_embedder(args), coarse, args.coarse_max_words),
        Stage(_generator(args), args.budget, args.max_words or FINE_MAX_WORDS),
    ]


def _embedder(args: argparse.Namespace) -> BlockScorer:
    from htmlrag_chat.scoring.embed import EmbeddingScorer

    return EmbeddingScorer(args.embed_model, device=args.device)


def _generator(args: argparse.Namespace) -> BlockScorer:
    from htmlrag_chat.scoring.generative import GenerativeScorer

    return GenerativeScorer(args.gen_model, device=args.device)


def read_input(file: str, encoding: str | None) -> PageInput:
    """Read one input file, with the failures a user can cause as InputError."""
    path = Path(file)
    try:
        if path.is_dir():
            raise InputError(f"{file}: is a directory")
        size = path.stat().st_size
        if size > MAX_INPUT_BYTES:
            raise InputError(f"{file}: {size / 2**20:.0f} MiB is over the 64 MiB input limit")
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{file}: no such file") from None
    except OSError as error:
        raise InputError(f"{file}: {error.strerror or error}") from None
    return PageInput(file, data, encoding)


def _progress_printer(enabled: bool) -> EventSink:
    """Stage progress (stage, counts, elapsed) on stderr; notices always."""
    start = time.perf_counter()

    def emit(event: Event) -> None:
        elapsed = time.perf_counter() - start
        if isinstance(event, Notice):
            _error(f"note: {event.message}")
        elif not enabled:
            return
        elif isinstance(event, StageStarted):
            items = f" ({event.items})" if event.items is not None else ""
            print(f"[{elapsed:6.2f}s] {event.stage}{items} ...", file=sys.stderr)
        elif isinstance(event, StageFinished):
            counts = ", ".join(f"{key} {value}" for key, value in event.counts.items())
            print(
                f"[{elapsed:6.2f}s] {event.stage} done in {event.ms:.0f} ms: {counts}",
                file=sys.stderr,
            )

    return emit


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _error(message: str) -> None:
    print(f"{PROG}: {message}", file=sys.stderr)
