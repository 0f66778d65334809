"""What ``eval`` and ``eval answers`` (``answers.py``) share: the run's settings, ``--out``
checked before the work, and the lists of budgets, methods and names as the options give
them. Apart from both commands, so that neither imports the other but to hand over."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from htmlrag_chat.base.atomic import check_replaceable
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.eval.methods import METHODS
from htmlrag_chat.eval.runner import EvalSettings

if TYPE_CHECKING:
    from htmlrag_chat.pruning.factory import PruneSettings

ANSWER_METHODS = "default,chunk-bm25,plain"  # what eval answers compares unless told


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
