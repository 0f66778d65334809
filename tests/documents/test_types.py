"""The table of document types: each extension once, every type's converter makes HTML, and
docs/docs.md lists exactly the types of the table, in its order."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents import types
from htmlrag_chat.documents.convert import convert
from htmlrag_chat.documents.made import Made
from htmlrag_chat.documents.opening import read_document
from htmlrag_chat.documents.types import (
    BY_EXTENSION,
    READ,
    TYPES,
    DocumentType,
    kind_of,
    type_of,
)
from htmlrag_chat.documents.walk import check_roots, find_documents

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


def csv_html(data: bytes, name: str) -> Made:
    """A new type's converter, in its own module in the program: rows as a table."""
    rows = [line.split(",") for line in data.decode("utf-8").splitlines() if line]
    cells = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return Made(f"<html><body><table>{cells}</table></body></html>".encode())


def test_a_type_added_to_the_table_is_found_read_and_converted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One entry (here put in the table's lookups) and its converter: the walk finds its
    files, the opening reads them to its cap and ``convert`` cleans what it makes."""
    csv = DocumentType("csv", "CSV", (".csv",), csv_html, cap=1000)
    monkeypatch.setitem(types.BY_EXTENSION, ".csv", csv)
    monkeypatch.setitem(types.BY_KIND, "csv", csv)
    (tmp_path / "hives.csv").write_text("hive,frames\nblue,9\n", encoding="utf-8")
    (file,) = find_documents(check_roots([str(tmp_path)])).files
    converted = convert(file.path, file.kind, read_document(file))
    assert file.kind == "csv" and converted.text.split() == ["hive", "frames", "blue", "9"]
    (tmp_path / "big.csv").write_text("x," * 600, encoding="utf-8")
    big = next(f for f in find_documents(check_roots([str(tmp_path)])).files if f.size > 1000)
    with pytest.raises(InputError, match="the limit for a file of its type"):
        read_document(big)
