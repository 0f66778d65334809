"""Benchmark reading Word files: this project's converter (``documents/docx.py``: the
standard library's zipfile and lxml) against mammoth (.docx to HTML) and python-docx (its
paragraphs' and cells' text, no structure), on one report written by python-docx: 60
sections, each a heading, 50 paragraphs and a 6x4 table. Best of 3 runs each; the words each
one finds are compared with the words written. Needs ``pip install mammoth python-docx``
(neither is a dependency of the project: a throwaway environment's site-packages may be put
on ``PYTHONPATH``). Writes bench/results/docx_libraries.json.
"""

from __future__ import annotations

import io
import platform
import re
import time
from collections.abc import Callable
from typing import Any

from benchlib import argument_parser, write_report
from htmlrag_chat.documents.docx import docx_html

RUNS = 3
WORD = re.compile(r"[^\W_]+")


def report() -> tuple[bytes, set[str]]:
    import docx

    document = docx.Document()
    written: list[str] = []
    for section in range(60):
        document.add_heading(f"Section {section}", level=1)
        written.append(f"Section {section}")
        for number in range(50):
            text = f"Paragraph {number} of section {section}: the cider press was oiled."
            document.add_paragraph(text)
            written.append(text)
        table = document.add_table(rows=6, cols=4)
        for row in range(6):
            for column in range(4):
                table.cell(row, column).text = f"r{row}c{column}s{section}"
                written.append(f"r{row}c{column}s{section}")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue(), set(WORD.findall(" ".join(written)))


def best(function: Callable[[], str]) -> tuple[str, float]:
    times = []
    for _ in range(RUNS):
        started = time.perf_counter()
        text = function()
        times.append(time.perf_counter() - started)
    return text, min(times)


def main() -> None:
    parser = argument_parser(__doc__ or "", "docx_libraries.json")
    args = parser.parse_args()
    import docx
    import mammoth

    data, written = report()

    def ours() -> str:
        return docx_html(data, "report.docx").html.decode()

    def with_mammoth() -> str:
        return str(mammoth.convert_to_html(io.BytesIO(data)).value)

    def with_python_docx() -> str:
        document = docx.Document(io.BytesIO(data))
        tables = document.tables
        cells = [cell.text for table in tables for row in table.rows for cell in row.cells]
        return " ".join([p.text for p in document.paragraphs] + cells)

    results: dict[str, Any] = {}
    for name, function in (
        ("zipfile + lxml (documents/docx.py)", ours),
        ("mammoth", with_mammoth),
        ("python-docx (text only)", with_python_docx),
    ):
        text, seconds = best(function)
        found = set(WORD.findall(re.sub(r"<[^>]+>", " ", text)))
        recall = round(len(found & written) / len(written), 4)
        results[name] = {"ms": round(seconds * 1000, 1), "word_recall": recall}
        print(f"{name:36} {seconds * 1000:8.1f} ms  word recall {recall}")
    info = {"file_bytes": len(data), "python": platform.python_version(), "runs": RUNS}
    write_report(args.out, {**info, "results": results})


if __name__ == "__main__":
    main()
