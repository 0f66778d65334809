"""One file's bytes to a cleaned page, whatever its type, and the page's title.

Every type becomes HTML through its converter (``types.py``'s table) and goes through the
same decoding and cleaning as a web page (``pipeline.clean_page``), so blocks, pruning and
citations know no difference. The title is the one the file declares (``<title>``, the front
matter, the PDF's or the Word file's metadata), else its first heading, else the file's name
(on one line, a byte that is not UTF-8 as an escape: ``shown_path``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.types import BY_KIND
from htmlrag_chat.html.blocks import serialize
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.headings import HEADING_TAGS
from htmlrag_chat.html.text import normalize_space, visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page


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
    made = BY_KIND[kind].to_html(data, name)
    cleaned, element = clean_page(PageInput(name, made.html, made.encoding))
    text = visible_text(element)
    if not text.strip():
        raise InputError(f"{name}: no text in it")
    title = cleaned.title or first_heading(element) or shown_path(path.name)
    return Converted(normalize_space(title), serialize(element).encode("utf-8"), text, made.cut)


def first_heading(element: Element) -> str:
    for heading in element.iter(*HEADING_TAGS):
        text = normalize_space(visible_text(heading))
        if text:
            return text
    return ""
