"""PDFs through PDFium: text in reading order, headings from the outline, lists; encrypted
and damaged files are one-line errors. The PDFs are real: LibreOffice's, and one written by
hand as the PDF reference describes (tests/fixtures/DOCUMENTS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents import pdf as pdf_module
from htmlrag_chat.documents.convert import convert
from htmlrag_chat.documents.pdf import pdf_html
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ORCHARD = FIXTURES / "documents" / "orchard.pdf"


def test_a_libreoffice_pdf_keeps_its_headings_paragraphs_and_list() -> None:
    converted = convert(ORCHARD, "pdf", ORCHARD.read_bytes())
    assert converted.title == "Orchard notes"  # the PDF's metadata
    element = parse(converted.html)
    headings = [(h.tag, visible_text(h)) for h in element.iter("h1", "h2")]
    assert headings == [("h1", "Orchard notes"), ("h2", "Harvest"), ("h2", "Pruning")]
    paragraphs = [visible_text(p) for p in element.iter("p")]
    assert paragraphs[0] == (
        "The quince tree by the north wall was planted in 2011 by Margit Halvorsen, who"
        " grafted it from her mother's tree."
    )
    # A paragraph that wraps over lines is one paragraph again; table rows stay lines.
    assert any(p.startswith("Prune the medlar") and p.endswith("to ripen.") for p in paragraphs)
    assert "Quince 41 2023" in paragraphs
    assert [visible_text(li) for li in element.iter("li")] == [
        "First pass: early July", "Second pass: late August",
    ]  # fmt: skip


def minimal_pdf(lines: list[str]) -> bytes:
    """A one-page PDF written by hand: catalog, pages, page, Helvetica, a content stream."""
    shown = "".join(f"({line}) Tj 0 -16 Td " for line in lines)
    stream = f"BT /F1 12 Tf 72 720 Td {shown}ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref,
    )  # fmt: skip
    return bytes(out)


def test_a_hand_written_pdf_without_outline_or_metadata_is_titled_by_its_name(
    tmp_path: Path,
) -> None:
    data = minimal_pdf(["Tide table for Skarvik", "", "Low water at six."])
    converted = convert(tmp_path / "tides.pdf", "pdf", data)
    assert converted.title == "tides.pdf"
    assert "Tide table for Skarvik" in converted.text and "Low water at six." in converted.text


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ((FIXTURES / "locked.pdf").read_bytes(), "encrypted (it needs a password)"),
        (ORCHARD.read_bytes()[:2000], "not a readable PDF (damaged, or not a PDF)"),
        (b"<html>not a pdf</html>", "not a readable PDF (damaged, or not a PDF)"),
    ],
    ids=["encrypted", "truncated", "not-a-pdf"],
)
def test_an_unreadable_pdf_is_one_line_naming_it(data: bytes, reason: str) -> None:
    with pytest.raises(InputError) as caught:
        pdf_html(data, "x.pdf")
    assert str(caught.value) == f"x.pdf: {reason}"


def test_a_pdf_of_images_only_has_no_text(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no text in it"):
        convert(tmp_path / "scan.pdf", "pdf", minimal_pdf([]))


def shared_stream_pdf(pages: int, lines: list[str]) -> bytes:
    """``pages`` pages written by hand that all draw one content stream (a line a unit
    below the last, in a font one unit high): a small file whose text is ``pages`` times
    the stream's (the campaign's was 330 KB for 2,000 pages)."""
    shown = "".join(f"({line}) Tj 0 -1 Td\n" for line in lines)
    stream = f"BT /F1 1 Tf 10 780 Td {shown}ET".encode()
    kids = " ".join(f"{4 + n} 0 R" for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids.encode(), pages),
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    objects += [
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R"
        b" /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica"
        b" >> >> >> >>"
    ] * pages
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref,
    )  # fmt: skip
    return bytes(out)


LINE = "The quince tree was planted by Margit Halvorsen; the medlar by her mother, in 1987."


def test_a_pdf_whose_pages_share_one_stream_is_cut_at_the_page_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """2,000 pages of one stream hold far more text than a page may: extraction stops
    where the cap is reached, rather than reading every page first (which took ~15 minutes
    and grew memory without end), and the cut is said. The cap is 1 MiB here, so that the
    test reads 4 pages, not the 18 that 5 MiB takes (bench/pdf_cap.py times those)."""
    monkeypatch.setattr(pdf_module, "MAX_PAGE_BYTES", 2**20)
    data = shared_stream_pdf(2000, [f"{n} {LINE * 5}" for n in range(700)])
    assert len(data) < 1_000_000  # a small file
    pdf = pdf_html(data, "book.pdf")
    assert pdf.cut == "cut after page 4 of 2,000 in part: its text reached the 1 MiB cap of a page"
    assert 2**20 - 300_000 < len(pdf.html) <= 2**20  # a page's text is one paragraph
    assert pdf.html.count(b"<section>") == 3 and pdf.html.endswith(b"</body></html>")
    assert b"699 The quince tree" in pdf.html  # the last line of the last page taken whole


def test_a_pdf_is_cut_at_its_page_and_time_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    data = shared_stream_pdf(5, [LINE])
    assert pdf_html(data, "x.pdf").cut is None
    monkeypatch.setattr(pdf_module, "MAX_PDF_PAGES", 3)
    pdf = pdf_html(data, "x.pdf")
    assert pdf.cut == "cut after 3 of 5 pages: 3 pages at most"
    assert pdf.html.count(b"<section>") == 3
    monkeypatch.setattr(pdf_module, "MAX_PDF_SECONDS", 0.0)  # past it after the first page
    pdf = pdf_html(data, "x.pdf")
    assert pdf.cut == "cut after 1 of 5 pages: reading took over 0 s of CPU time"
    assert pdf.html.count(b"<section>") == 1
