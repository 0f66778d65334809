"""Word files: a real one (written by python-docx) becomes a page with its title, headings,
table and list; localised heading styles are headings; hostile files (a zip bomb, a part
that leads out of the package, a DTD's entities, an encrypted member, no zip at all) are a
note or one line, never a crash or a read past the caps."""

from __future__ import annotations

import io
import time
import zipfile
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents import docx as docx_module
from htmlrag_chat.documents.convert import convert
from htmlrag_chat.documents.docx import docx_html
from htmlrag_chat.documents.walk import check_roots, find_documents
from htmlrag_chat.html.dom import parse

CELLAR = Path(__file__).resolve().parents[1] / "fixtures" / "cellar.docx"
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
RELATIONS = (
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
    'relationships/officeDocument" Target="{target}"/></Relationships>'
)


def package(body: str = "", target: str = "word/document.xml", **parts: str) -> bytes:
    """A .docx as Word lays one out: the content types, the package's relationships, the
    main part with ``body`` in its ``w:body``, and ``parts`` (name: XML) beside them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as written:
        written.writestr("[Content_Types].xml", "<Types/>")
        written.writestr("_rels/.rels", RELATIONS.format(target=target))
        document = f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>'
        written.writestr("word/document.xml", document)
        for name, xml in parts.items():
            written.writestr(name, xml)
    return buffer.getvalue()


def paragraph(text: str, style: str = "") -> str:
    properties = f'<w:pPr><w:pStyle w:val="{style}"/></w:pPr>' if style else ""
    return f"<w:p>{properties}<w:r><w:t>{text}</w:t></w:r></w:p>"


def test_a_real_word_file_is_a_page_with_its_title_headings_table_and_list() -> None:
    converted = convert(CELLAR, "docx", CELLAR.read_bytes())
    assert converted.title == "Cellar inventory"  # the core properties'
    assert "bought in 1987 from the Ostergaard farm sale" in converted.text
    element = parse(converted.html)
    assert [h.text for h in element.iter("h1", "h2")] == ["Cellar inventory", "Shelves", "To do"]
    rows = [[cell.text for cell in row.iter("td")] for row in element.iter("tr")]
    assert rows[2] == ["South", "Quince wine", "11"]
    assert [li.text for li in element.iter("li")] == [
        "Rack the perry before Easter",
        "Oil the press screw",
    ]
    assert converted.cut is None


def test_a_folder_of_notes_finds_word_files(tmp_path: Path) -> None:
    (tmp_path / "cellar.docx").write_bytes(CELLAR.read_bytes())
    found = find_documents(check_roots([str(tmp_path)]))
    assert [(file.path.name, file.kind) for file in found.files] == [("cellar.docx", "docx")]


def test_a_localised_heading_style_is_a_heading_by_its_built_in_name() -> None:
    styles = (
        f'<w:styles xmlns:w="{W}"><w:style w:type="paragraph" w:styleId="berschrift2">'
        '<w:name w:val="heading 2"/></w:style></w:styles>'
    )
    body = paragraph("Keller", "berschrift2") + paragraph("Die Presse steht links.")
    made = docx_html(package(body, **{"word/styles.xml": styles}), "x.docx")
    assert b"<h2>Keller</h2><p>Die Presse steht links.</p>" in made.html


def test_a_zip_bomb_of_text_is_cut_at_the_page_cap_with_a_note() -> None:
    """Megabytes of text that pack into kilobytes: read until the page is full, cut there."""
    body = paragraph("The press was oiled again. " * 40) * 20_000  # ~22 MB unpacked
    bomb = package(body)
    assert len(bomb) < 200_000
    made = docx_html(bomb, "bomb.docx")
    assert made.cut is not None and made.cut.startswith("cut after ")
    assert made.cut.endswith("its text reached the 5 MiB cap of a page")
    assert 5 * 2**20 - 2000 < len(made.html) <= 5 * 2**20


def test_a_zip_bomb_of_markup_stops_at_the_part_cap(monkeypatch) -> None:
    """A part that unpacks past ``MAX_PART_BYTES`` with little text is read that far only."""
    monkeypatch.setattr(docx_module, "MAX_PART_BYTES", 2**20)
    bomb = package(paragraph("First words.") + "<w:p/>" * 400_000)  # ~2.4 MB of empty ones
    started = time.monotonic()
    made = docx_html(bomb, "bomb.docx")
    assert made.cut == "cut after 1 paragraphs: its text part is larger than 1 MiB unpacked"
    assert b"First words." in made.html
    assert time.monotonic() - started < 30  # a bound, not a timing: it stopped early


def test_a_main_part_that_leads_out_of_the_package_is_refused() -> None:
    with pytest.raises(InputError, match=r"^x\.docx: its main part leads out of the file"):
        docx_html(package(paragraph("x"), target="../../etc/passwd"), "x.docx")


def test_a_member_named_with_dot_dot_is_never_read_or_written(tmp_path: Path) -> None:
    data = package(paragraph("Only this."), **{"../../outside.xml": "<x>secret</x>"})
    made = docx_html(data, "x.docx")
    assert b"Only this." in made.html and b"secret" not in made.html
    assert list(tmp_path.iterdir()) == []


def test_entities_of_a_dtd_are_not_expanded() -> None:
    laughs = (
        '<?xml version="1.0"?><!DOCTYPE w:document [<!ENTITY a "lol">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;">]>'
        f'<w:document xmlns:w="{W}"><w:body>{paragraph("Before &c; after.")}</w:body>'
        "</w:document>"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as written:
        written.writestr("_rels/.rels", RELATIONS.format(target="word/document.xml"))
        written.writestr("word/document.xml", laughs)
    made = docx_html(buffer.getvalue(), "x.docx")
    assert b"lol" not in made.html


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"not a zip at all", r"^x\.docx: not a Word file \(not a readable zip\)$"),
        (b"PK\x03\x04", r"^x\.docx: not a Word file \(not a readable zip\)$"),
        ("no-rels", r"^x\.docx: not a Word file \(no package relationships\)$"),
        ("broken", r"^x\.docx: not a readable Word file \(its text part is broken\)$"),
        ("encrypted", r"^x\.docx: encrypted \(it needs a password\)$"),
    ],
)
def test_a_file_that_is_no_word_file_is_one_line(data: bytes | str, said: str) -> None:
    if data == "no-rels":
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as written:
            written.writestr("word/document.xml", "<x/>")
        data = buffer.getvalue()
    elif data == "broken":
        data = package("<w:p><w:r><w:t>cut off")
    elif data == "encrypted":
        # The central directory's entry of the main part marked "encrypted", as a
        # password-protected zip marks it (zipfile writes no encrypted members itself).
        data = bytearray(package())
        entry = data.rindex(b"PK\x01\x02")  # the last entry: word/document.xml
        data[entry + 8] |= 0x1
        data = bytes(data)
    assert isinstance(data, bytes)
    with pytest.raises(InputError, match=said):
        docx_html(data, "x.docx")
