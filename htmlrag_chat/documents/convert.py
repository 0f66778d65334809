"""One file's bytes to a cleaned page, whatever its type, and the page's title.

Every type becomes HTML and goes through the same decoding and cleaning as a web page
(``pipeline.clean_page``), so blocks, pruning and citations know no difference: an HTML file
as it is; Markdown rendered by markdown-it-py (CommonMark with tables and strikethrough:
headings, lists and tables become the same elements a page has; a YAML front matter's
``title:`` is the title); plain text as paragraphs (blank lines between them); a PDF
through ``pdf.py``. The title is the one the file declares (``<title>``, the front matter,
the PDF's metadata), else its first heading, else the file's name (on one line, a byte
that is not UTF-8 as an escape: ``shown_path``).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.pdf import pdf_html
from htmlrag_chat.documents.types import HTML, MARKDOWN, PDF
from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.html.decode import decode_html, looks_binary
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.headings import HEADING_TAGS
from htmlrag_chat.html.text import normalize_space, visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")


@dataclass(frozen=True)
class Converted:
    """A document as the cache keeps it: its title, cleaned HTML and visible text."""

    title: str
    html: bytes  # cleaned, UTF-8: ``clean_page`` reads it again as it is
    text: str
    cut: str | None = None  # why the document stops short of the file's end (a long PDF)


def convert(path: Path, kind: str, data: bytes) -> Converted:
    """The document ``data`` (of ``kind``, read from ``path``) as a cleaned page; a file
    that is broken, encrypted, binary or without text is an ``InputError`` naming it."""
    name = shown_path(path)
    cut = None
    if kind == PDF:
        pdf = pdf_html(data, name)
        page, cut = PageInput(name, pdf.html.encode("utf-8"), "utf-8"), pdf.cut
    elif kind == HTML:
        page = PageInput(name, data)
    else:
        if looks_binary(data):
            raise InputError(f"{name}: binary data, not text")
        text = decode_html(data).text
        made = markdown_html(text) if kind == MARKDOWN else text_html(text)
        page = PageInput(name, made.encode("utf-8"), "utf-8")
    cleaned, element = clean_page(page)
    text = visible_text(element)
    if not text.strip():
        raise InputError(f"{name}: no text in it")
    title = cleaned.title or first_heading(element) or shown_path(path.name)
    return Converted(normalize_space(title), serialize(element).encode("utf-8"), text, cut)


def first_heading(element: Element) -> str:
    for heading in element.iter(*HEADING_TAGS):
        text = normalize_space(visible_text(heading))
        if text:
            return text
    return ""


def markdown_html(text: str) -> str:
    """Markdown as an HTML page; raw HTML in it passes on to cleaning, as a page's would."""
    from markdown_it import MarkdownIt

    title = ""
    front = _FRONT_MATTER.match(text)
    if front is not None:
        declared = _FRONT_TITLE.search(front.group(1))
        title = declared.group(1).strip("'\"") if declared else ""
        text = text[front.end() :]
    renderer = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    body = renderer.render(text)
    return f"<html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>"


def text_html(text: str) -> str:
    """Plain text as an HTML page: a paragraph per blank-line-separated run (the lines of
    one run are one paragraph, as a browser would show them)."""
    paragraphs = _PARAGRAPHS.split(text.replace("\r\n", "\n").replace("\r", "\n").strip())
    body = "".join(f"<p>{html.escape(part)}</p>" for part in paragraphs)
    return f"<html><body>{body}</body></html>"
