"""The page cap (and a PDF document's) as the documentation states it: the figure users
read is the one enforced."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents.docx import MAX_PART_BYTES
from htmlrag_chat.documents.pdf import MAX_PDF_BYTES
from htmlrag_chat.html.limits import MAX_PAGE_BYTES, read_page_file
from htmlrag_chat.web.apis import MAX_ANSWER_BYTES

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_mib_figure_in_the_docs_is_the_cap_the_code_enforces() -> None:
    figures = {
        (path.name, int(size))
        for path in DOCS
        for size in re.findall(r"(\d+) MiB", path.read_text(encoding="utf-8"))
    }
    cap, pdf_cap = MAX_PAGE_BYTES >> 20, MAX_PDF_BYTES >> 20
    answer = MAX_ANSWER_BYTES >> 20  # a search API's answer
    part = MAX_PART_BYTES >> 20  # a Word file's part, unpacked
    allowed = {cap, pdf_cap, answer, part, 1}  # 1 MiB: a long Wikipedia article, the config file
    assert figures and {size for _, size in figures} <= allowed, sorted(figures)
    assert ("cli.md", cap) in figures and ("search.md", answer) in figures
    assert ("docs.md", pdf_cap) in figures and ("docs.md", part) in figures


def test_a_file_one_byte_over_the_cap_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "big.html"
    page.write_bytes(b"a" * (MAX_PAGE_BYTES + 1))
    with pytest.raises(InputError, match="larger than 5 MiB"):
        read_page_file(str(page))
    page.write_bytes(b"a" * MAX_PAGE_BYTES)
    assert len(read_page_file(str(page))) == MAX_PAGE_BYTES
