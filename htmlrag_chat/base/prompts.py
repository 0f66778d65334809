"""The LLM prompts, kept as editable text files in the repository's ``prompts/`` folder.

A wheel ships them as package data (``htmlrag_chat/_prompts``, mapped from ``prompts/`` in
``pyproject.toml``); a checkout, run in place or installed in editable mode, reads them
from ``prompts/`` beside the package, so an edit there shows on the next run.
"""

from __future__ import annotations

import datetime as dt
from functools import cache
from pathlib import Path


def _prompts_dir() -> Path:
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_prompts"  # installed from a wheel
    return shipped if shipped.is_dir() else package.parent / "prompts"  # a checkout


PROMPTS_DIR = _prompts_dir()


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def today() -> str:
    """Today's date as the prompts give it (``{today}``): the model's own sense of "now" is
    its training cut-off."""
    return dt.date.today().isoformat()
