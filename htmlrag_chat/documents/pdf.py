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
the page's cap like any other document. Its text is what costs: a small file whose 2,000
pages all draw one content stream holds 2,000 times that stream's text, and extracting all
of it before measuring took about 15 minutes. So pages are extracted one after the other
and the page is built as they come: at the cap, at ``MAX_PDF_PAGES`` or after
``MAX_PDF_SECONDS`` the document is cut there, and ``Made.cut`` says where and why for
a note. Encrypted and damaged files are ``InputError``.
"""

from __future__ import annotations

import html
import itertools
import re
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents.made import Made
from htmlrag_chat.html.limits import MAX_PAGE_BYTES
from htmlrag_chat.html.text import normalize_space
from htmlrag_chat.modelio.extras import needed

if TYPE_CHECKING:  # the `pdf` extra, imported when a PDF is read
    import pypdfium2

MAX_PDF_BYTES = 64 * 2**20
MAX_PDF_PAGES = 2000
# A PDF whose text took longer than this to read is cut where it got to. It is the reading
# thread's CPU time, not the clock's: a busy machine must not cut (and cache) less of it.
MAX_PDF_SECONDS = 10.0
MAX_OUTLINE = 10_000  # outline entries read for headings: a book has hundreds
MAX_TITLE = 1000  # characters of the metadata's title
_FULL_LINE = 0.8  # of the page's long lines' length: a shorter line ends its paragraph
_BULLET = re.compile(r"^\s*[•◦▪▫●○■□‣\u2043∙\uf0b7\uf0a7]\s*")
_SOFT_HYPHEN = ("\u00ad", "\x02")  # PDFium's marks of a word broken at a line's end
_LOCK = threading.Lock()


def pdf_html(data: bytes, name: str) -> Made:
    """The PDF in ``data`` as an HTML page; ``name`` is said in errors."""
    with needed("pdf", "reading PDF files"):
        import pypdfium2 as pdfium
    with _LOCK:
        started = time.thread_time()
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            raise InputError(f"{name}: {_why(error)}") from None
        try:
            title = normalize_space(document.get_metadata_dict().get("Title") or "")
            head = f"<html><head><title>{html.escape(title[:MAX_TITLE])}</title></head><body>"
            tail = "</body></html>"
            room = MAX_PAGE_BYTES - len(head.encode("utf-8")) - len(tail)
            body, cut = _body(document, _outline(document), room, started)
        finally:
            document.close()
    return Made((head + body + tail).encode("utf-8"), cut=cut)


def _body(
    document: pypdfium2.PdfDocument,
    headings: dict[int, dict[str, int]],
    room: int,
    started: float,
) -> tuple[str, str | None]:
    """The pages' HTML, page after page, until the file ends or a bound is met: ``room``
    bytes (the page cap), ``MAX_PDF_PAGES`` pages or ``MAX_PDF_SECONDS`` of CPU. What each page
    costs is paid before its size is known, so the text is measured as it comes, never
    extracted past the cap."""
    total = len(document)
    parts: list[str] = []
    for index in range(min(total, MAX_PDF_PAGES)):
        if index and time.thread_time() - started > MAX_PDF_SECONDS:
            took = f"reading took over {MAX_PDF_SECONDS:g} s of CPU time"
            return "".join(parts), _cut(index, total, took)
        page = document[index]
        try:
            textpage = page.get_textpage()
            text = textpage.get_text_bounded()
            textpage.close()
        finally:
            page.close()
        section = ["<section>"]
        for block in _page_blocks(text, headings.get(index, {})):
            size = len(block.encode("utf-8"))
            if size + len("<section></section>") > room:
                if len(section) > 1:
                    parts.append("".join(section) + "</section>")
                within = f"its text reached the {MAX_PAGE_BYTES >> 20} MiB cap of a page"
                return "".join(parts), _cut(index + 1, total, within, partly=True)
            section.append(block)
            room -= size
        parts.append("".join(section) + "</section>")
        room -= len("<section></section>")
    if total > MAX_PDF_PAGES:
        return "".join(parts), _cut(MAX_PDF_PAGES, total, f"{MAX_PDF_PAGES:,} pages at most")
    return "".join(parts), None


def _cut(pages: int, total: int, why: str, partly: bool = False) -> str:
    """Why a PDF stops short, for the note: the pages read and the bound that was met."""
    read = f"page {pages} of {total:,} in part" if partly else f"{pages:,} of {total:,} pages"
    return f"cut after {read}: {why}"


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
    for item in itertools.islice(document.get_toc(max_depth=6), MAX_OUTLINE):
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
