"""A PDF's text as HTML: pages in reading order, headings where the file's outline names them.

PDFium (``pypdfium2``, the ``pdf`` extra) reads the text; docs/benchmarks.md has the
measurement that chose it over pypdf: the same words on LibreOffice's PDFs, about 19 times
faster. A PDF holds lines, not paragraphs, so lines are joined back into paragraphs: a line
as long as the page's full lines goes on in the next one, a shorter one ends its paragraph
(the last line of a paragraph, a table row, a caption). A line that is an entry of the
outline (bookmarks, which writers make from headings) becomes a heading of its level, and a
line that starts with a bullet a list item. PDFium has no tables to give: rows stay lines.

PDFium is not safe to call from two threads at once, and concurrent MCP calls may each read
documents, so every use of it holds one lock. A PDF carries fonts and images besides its
text, so its file may be larger than a page (``MAX_PDF_BYTES``); what it becomes is held to
the page's cap like any other document. Encrypted and damaged files are ``InputError``.
"""

from __future__ import annotations

import html
import re
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.extras import needed
from htmlrag_chat.html.text import normalize_space

if TYPE_CHECKING:  # the `pdf` extra, imported when a PDF is read
    import pypdfium2

MAX_PDF_BYTES = 64 * 2**20
MAX_PDF_PAGES = 2000
_FULL_LINE = 0.8  # of the page's long lines' length: a shorter line ends its paragraph
_BULLET = re.compile(r"^\s*[•◦▪▫●○■□‣\u2043∙\uf0b7\uf0a7]\s*")
_SOFT_HYPHEN = ("\u00ad", "\x02")  # PDFium's marks of a word broken at a line's end
_LOCK = threading.Lock()


def pdf_html(data: bytes, name: str) -> str:
    """The PDF in ``data`` as an HTML page; ``name`` is said in errors."""
    with needed("pdf", "reading PDF files"):
        import pypdfium2 as pdfium
    with _LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            raise InputError(f"{name}: {_why(error)}") from None
        try:
            title = normalize_space(document.get_metadata_dict().get("Title") or "")
            headings = _outline(document)
            pages = []
            for index in range(min(len(document), MAX_PDF_PAGES)):
                page = document[index]
                textpage = page.get_textpage()
                pages.append(textpage.get_text_bounded())
                textpage.close()
                page.close()
        finally:
            document.close()
    body = "".join(
        f"<section>{''.join(_page_blocks(text, headings.get(index, {})))}</section>"
        for index, text in enumerate(pages)
    )
    return f"<html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>"


def _why(error: Exception) -> str:
    code = getattr(error, "err_code", None)
    if code == 4:  # FPDF_ERR_PASSWORD
        return "encrypted (it needs a password)"
    if code == 6:  # FPDF_ERR_SECURITY
        return "protected by a security handler PDFium does not support"
    return "not a readable PDF (damaged, or not a PDF)"


def _outline(document: pypdfium2.PdfDocument) -> dict[int, dict[str, int]]:
    """Outline entries by page: each title (spaces normalised, casefolded) and its level."""
    found: dict[int, dict[str, int]] = {}
    for item in document.get_toc(max_depth=6):
        destination = item.get_dest()
        index = destination.get_index() if destination is not None else None
        title = normalize_space(item.get_title() or "").casefold()
        if index is not None and title:
            found.setdefault(index, {}).setdefault(title, min(item.level + 1, 6))
    return found


def _page_blocks(text: str, headings: dict[str, int]) -> Iterator[str]:
    """A page's lines as headings, list items and paragraphs of HTML."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    lengths = sorted(len(line) for line in lines if line.strip())
    full = _FULL_LINE * lengths[int(len(lengths) * 0.9)] if lengths else 0
    paragraph: list[str] = []
    items: list[list[str]] = []  # each item's lines

    def paragraph_ended() -> Iterator[str]:
        if paragraph:
            yield f"<p>{html.escape(_joined(paragraph))}</p>"
            paragraph.clear()

    def ended() -> Iterator[str]:
        yield from paragraph_ended()
        if items:
            yield "<ul>" + "".join(f"<li>{html.escape(_joined(i))}</li>" for i in items) + "</ul>"
            items.clear()

    continues = False  # the line before was a full one: this one goes on with it
    for line in lines:
        words = normalize_space(line)
        level = headings.get(words.casefold()) if words else None
        bullet = _BULLET.match(line) if words else None
        if not words or level:
            yield from ended()
            if level:
                yield f"<h{level}>{html.escape(words)}</h{level}>"
            continues = False
            continue
        if bullet:
            yield from paragraph_ended()
            items.append([line[bullet.end() :].strip()])
        elif continues and items and not paragraph:
            items[-1].append(line.strip())
        elif continues and paragraph:
            paragraph.append(line.strip())
        else:
            yield from ended()
            paragraph.append(line.strip())
        continues = len(line) >= full
    yield from ended()


def _joined(lines: list[str]) -> str:
    """Lines of one paragraph as one line: a word broken with a soft hyphen is whole again."""
    text = ""
    for line in lines:
        if text.endswith(_SOFT_HYPHEN):
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return normalize_space(text)
