"""The table of document types: each extension once, every type's converter makes HTML, and
docs/docs.md lists exactly the types of the table, in its order."""

from __future__ import annotations

import re
from pathlib import Path

from htmlrag_chat.documents.types import BY_EXTENSION, READ, TYPES, kind_of, type_of

DOC = Path(__file__).resolve().parents[2] / "docs" / "docs.md"


def test_docs_lists_the_types_of_the_table_with_their_extensions() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("| type | extensions |") :].split("\n\n", 1)[0]
    rows = [row.split("|")[1:3] for row in table.splitlines()[2:]]
    documented = [(label.strip(), tuple(re.findall(r"`([^`]+)`", cells))) for label, cells in rows]
    assert documented == [(type_.label, type_.extensions) for type_ in TYPES]


def test_an_extension_names_one_type_whatever_its_case() -> None:
    assert sum(len(type_.extensions) for type_ in TYPES) == len(BY_EXTENSION)
    assert kind_of(Path("Report.DOCX")) == "docx" and type_of(Path("a.png")) is None
    assert READ == "HTML, Markdown, text, PDF and Word"
