"""The two evaluation sets, read from JSON lines with every problem named by line.

Retention: ``{"url", "file", "with": [...], "without": [...]}``, snippets of one page's main
content and of its boilerplate. QA: ``{"id", "question", "answers": [...], "file"}`` for a
question about one page (mixed with distractors later) or ``"pages": [files]`` for a
question with its own set of pages, with optional ``"lang"`` and ``"location"`` (where the
answer sits: table, list, prose) that the report breaks the figures down by. Files are
relative to the dataset's folder, or to a folder the caller names, so that a dataset
committed with the code can name pages kept elsewhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.eval.pages import inside, is_page_file

TASKS = ("retention", "qa")


@dataclass(frozen=True)
class RetentionItem:
    id: str  # the page's URL
    file: Path
    with_snippets: tuple[str, ...]
    without_snippets: tuple[str, ...]


@dataclass(frozen=True)
class QAItem:
    id: str
    question: str
    answers: tuple[str, ...]
    files: tuple[Path, ...]
    distractors: bool  # a single-page question: mix it with distractor pages
    lang: str = ""  # the question's language, for the report's breakdown
    location: str = ""  # where the answer sits (table, list, prose), likewise


Item = RetentionItem | QAItem


def load_dataset(
    task: str, path: Path, limit: int | None = None, pages: Path | None = None
) -> list[Item]:
    """The first ``limit`` items of a dataset, page files relative to ``pages`` (default: the
    dataset's folder); InputError for a missing file, a line that is not a JSON object of the
    task's shape, or a page file that does not exist."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: no such dataset") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read ({error})") from None
    items: list[Item] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{shown_path(path)}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{where}: not valid JSON ({error.msg})") from None
        except RecursionError:  # json nests by recursion: 100,000 "[" exhaust the stack
            raise InputError(f"{where}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise InputError(f"{where}: not a JSON object")
        items.append(_item(task, record, pages or path.parent, where))
        if limit is not None and len(items) == limit:
            break
    if not items:
        raise InputError(f"{path}: no items")
    return items


def _item(task: str, record: dict[str, Any], folder: Path, where: str) -> Item:
    if task == "retention":
        return RetentionItem(
            id=_text(record, "url", where),
            file=_page(folder, _text(record, "file", where), where),
            with_snippets=_texts(record, "with", where),
            without_snippets=_texts(record, "without", where),
        )
    if "pages" in record:
        pages = record["pages"]
        if not isinstance(pages, list) or not pages or not all(isinstance(p, str) for p in pages):
            raise InputError(f'{where}: "pages" must be a non-empty list of file names')
        files = tuple(_page(folder, page, where) for page in pages)
    else:
        files = (_page(folder, _text(record, "file", where), where),)
    return QAItem(
        id=one_line(str(record.get("id", where))),
        question=_text(record, "question", where),
        answers=_texts(record, "answers", where, required=True),
        files=files,
        distractors="pages" not in record,
        lang=_label(record, "lang", where),
        location=_label(record, "location", where),
    )


def _label(record: dict[str, Any], key: str, where: str) -> str:
    """A label the report groups by and prints in its tables: on one line, safe to show
    (``one_line``: no escape sequences, C1 controls or bidi overrides), as ids are."""
    value = record.get(key, "")
    if not isinstance(value, str):
        raise InputError(f'{where}: "{key}" must be a string')
    return one_line(value)


def _text(record: dict[str, Any], key: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f'{where}: "{key}" must be a non-empty string')
    return value


def _texts(record: dict[str, Any], key: str, where: str, required: bool = False) -> tuple[str, ...]:
    value = record.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f'{where}: "{key}" must be a list of strings')
    if required and not any(v.strip() for v in value):
        raise InputError(f'{where}: "{key}" must hold at least one non-empty string')
    return tuple(value)


def _page(folder: Path, name: str, where: str) -> Path:
    """The page file's real path: inside ``folder`` (``pages.inside``), a regular file."""
    path = inside(folder, name, where)
    if not is_page_file(path):
        what = "is not a regular file" if os.path.lexists(path) else "not found"
        raise InputError(f"{where}: page file {shown_path(name)} {what} in {shown_path(folder)}")
    return path
