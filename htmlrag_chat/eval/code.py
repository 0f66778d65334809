"""The code that made an evaluation result, as one fingerprint in the result's cache key.

A cached result is only as good as the code that computed it: edit ``scoring/fused.py``,
rerun ``eval``, and the old figures must not come back. So the key holds a hash of the
source of every module a result can depend on: the methods, the metrics and the item
preparation, and everything they import, directly or through others (the recipe, the
pruning factory, the scorers, the pipeline, the HTML core), read from the real imports
(``htmlrag_chat.base.imports``), so a module added to the recipe is covered without a list to
keep. The prompts (``prompts/*.md``; the generative pruner reads one) count when the
modules that load them do. Modules no result depends on (the reader, the chat app) are
left out: editing them re-measures nothing. Model weights and the tokenizer are keyed by
name elsewhere.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from htmlrag_chat.base.imports import ROOT, closure, import_graph, module_files
from htmlrag_chat.base.prompts import PROMPTS_DIR

# What computes a result: each method's preparation and fit, the scores, the items' pages.
ROOTS = ("htmlrag_chat.eval.methods", "htmlrag_chat.eval.metrics", "htmlrag_chat.eval.items")


def code_modules(root: Path = ROOT, roots: tuple[str, ...] = ROOTS) -> list[str]:
    """The modules whose source the fingerprint covers, sorted: ``roots`` and all they import
    (``eval answers`` adds its own roots: the reader, the prompt layout, the reading)."""
    return sorted(closure(roots, import_graph(root)))


def code_fingerprint(
    root: Path = ROOT, prompts: Path = PROMPTS_DIR, roots: tuple[str, ...] = ROOTS
) -> str:
    """A hash of the names and source bytes of ``code_modules`` of the package at ``root``,
    and of the prompt files in ``prompts`` when a covered module loads prompts."""
    files = module_files(root)
    modules = code_modules(root, roots)
    sources = [(module, files[module]) for module in modules]
    if "htmlrag_chat.base.prompts" in modules:
        sources += [(path.name, path) for path in sorted(prompts.glob("*.md"))]
    digest = hashlib.sha256()
    for name, path in sources:
        digest.update(name.encode("utf-8") + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def installed_fingerprint(roots: tuple[str, ...] = ROOTS) -> str:
    """The fingerprint of the code running now, worked out once per process."""
    return code_fingerprint(roots=roots)
