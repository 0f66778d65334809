"""The LLM prompts, kept as editable text files in the repository's ``prompts/`` folder.

A wheel ships them as package data (``htmlrag_chat/_prompts``, mapped from ``prompts/`` in
``pyproject.toml``); a checkout, run in place or installed in editable mode, reads them
from ``prompts/`` beside the package, so an edit there shows on the next run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path


def _prompts_dir() -> Path:
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_prompts"  # installed from a wheel
    return shipped if shipped.is_dir() else package.parent / "prompts"  # a checkout


PROMPTS_DIR = _prompts_dir()
_DAY: ContextVar[str | None] = ContextVar("prompt_day", default=None)  # ``dated``'s day


@cache
def load_prompt(name: str) -> str:
    """The text of ``prompts/<name>.md``."""
    return (PROMPTS_DIR / f"{name}.md").read_text(encoding="utf-8")


def today() -> str:
    """Today's date as the prompts give it (``{today}``): the model's own sense of "now" is
    its training cut-off. Inside ``dated``, the day it names."""
    return _DAY.get() or dt.date.today().isoformat()


@contextmanager
def dated(day: str) -> Iterator[None]:
    """Prompts made inside it say that today is ``day`` (ISO): an evaluation's prompts, and
    so its cached answers and its figures, must not change with the day it runs."""
    token = _DAY.set(day)
    try:
        yield
    finally:
        _DAY.reset(token)
