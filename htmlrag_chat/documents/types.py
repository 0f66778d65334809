"""Which files are documents: one table of the types read, each with its extensions, the
most of a file read, the extra it needs and the function that makes it HTML.

A new type is one entry here and its converter in a module of its own: the walk finds its
files, the opening reads them up to its cap, ``convert.py`` cleans what it makes as a web
page, and docs/docs.md's table lists it (``tests/documents/test_types.py`` checks the page
against this table).

The extension decides, not the content: a folder of notes holds many files a reader was
never meant to see (images, archives), and sniffing each one would read them all. Anything
else is left out and counted by its extension, for one note per question.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.docx import MAX_DOCX_BYTES, docx_html
from htmlrag_chat.documents.made import Made
from htmlrag_chat.documents.pdf import MAX_PDF_BYTES, pdf_html
from htmlrag_chat.documents.textfiles import html_as_is, markdown_html, text_html
from htmlrag_chat.html.limits import MAX_PAGE_BYTES

Converter = Callable[[bytes, str], Made]  # the file's bytes and its name for errors


@dataclass(frozen=True)
class DocumentType:
    """One type of document. ``kind`` is its name where documents are kept (the cache's
    rows), ``label`` how notes and docs/docs.md name it; ``cap`` is the most of a file read
    (a type that carries fonts and images may be larger than the page it becomes, which is
    held to the page's cap all the same); ``extra`` the optional install it needs."""

    kind: str
    label: str
    extensions: tuple[str, ...]
    to_html: Converter
    cap: int = MAX_PAGE_BYTES
    extra: str | None = None


TYPES: tuple[DocumentType, ...] = (
    DocumentType("html", "HTML", (".html", ".htm", ".xhtml", ".xht"), html_as_is),
    DocumentType("markdown", "Markdown", (".md", ".markdown", ".mdown", ".mkd"), markdown_html),
    DocumentType("text", "text", (".txt", ".text"), text_html),
    DocumentType("pdf", "PDF", (".pdf",), pdf_html, MAX_PDF_BYTES, extra="pdf"),
    DocumentType("docx", "Word", (".docx",), docx_html, MAX_DOCX_BYTES),
)

BY_KIND = {type_.kind: type_ for type_ in TYPES}
BY_EXTENSION = {extension: type_ for type_ in TYPES for extension in type_.extensions}
assert len(BY_EXTENSION) == sum(len(type_.extensions) for type_ in TYPES), "an extension twice"
READ = ", ".join(type_.label for type_ in TYPES[:-1]) + f" and {TYPES[-1].label}"


def type_of(path: Path) -> DocumentType | None:
    """The type of document ``path`` is by its extension, or None for a type not read."""
    return BY_EXTENSION.get(path.suffix.lower())


def kind_of(path: Path) -> str | None:
    """The kind ``path`` is kept as, or None for a type not read."""
    found = type_of(path)
    return found.kind if found is not None else None


def type_name(path: Path) -> str:
    """How a skipped file's type is named in the note: its extension (on one line, as any
    part of a name), or what it lacks."""
    return shown_path(path.suffix.lower()) or "no extension"
