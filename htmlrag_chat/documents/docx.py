"""A Word file (``.docx``) as HTML: its paragraphs, headings, list items and tables in order.

A ``.docx`` is a zip of XML parts (Office Open XML, ECMA-376): the main part, found through
the package's relationships (``_rels/.rels``), holds the body; ``word/styles.xml`` says which
paragraph styles are headings (by their built-in names, ``heading 1``..., or an outline
level, so a German ``Überschrift1`` is a heading too); ``docProps/core.xml`` holds the
title. The standard library's zipfile and lxml, both already here, read it: no dependency
(docs/benchmarks.md has the measurement).

The file is data from anywhere, so nothing in it is trusted: no member is ever written out
(a name with ``../`` reaches nothing, and a relationship whose target leads out of the
package is refused); each part is decompressed as it is parsed and read only up to
``MAX_PART_BYTES`` (a zip bomb stops there); the XML is parsed without a DTD, entities or
the network; links keep their text, never their target; and the page is held to the page's
cap, cut between two paragraphs with a note saying where, as a long PDF is. Broken,
encrypted and non-Word files are an ``InputError`` of one line.
"""

from __future__ import annotations

import html
import io
import posixpath
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents.made import Made
from htmlrag_chat.html.limits import MAX_PAGE_BYTES
from htmlrag_chat.html.text import normalize_space

# A Word file with its images may be far larger than its text: the file's cap, as a PDF's.
MAX_DOCX_BYTES = 64 * 2**20
# Decompressed bytes of one XML part read at most: a book's document.xml is a few MiB, a
# zip bomb's is gigabytes.
MAX_PART_BYTES = 32 * 2**20
MAX_TITLE = 1000  # characters of the core properties' title
_CHUNK = 64 * 1024

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_OFFICE_DOCUMENT = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument",
    "http://purl.oclc.org/ooxml/officeDocument/relationships/officeDocument",  # strict
)
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship"
_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_HEADING_NAME = re.compile(r"^(?:heading\s*(\d)|title)$", re.I)


def w(name: str) -> str:
    return f"{{{_W}}}{name}"


class _Full(Exception):
    """The page reached its cap: the paragraphs so far are the document."""


@dataclass
class _Page:
    """The body's HTML as it is built, and the room left under the page's cap (the room for
    closing an open list kept aside)."""

    room: int
    parts: list[str] = field(default_factory=list)
    in_list: bool = False
    blocks: int = 0

    def add(self, markup: str, item: bool = False) -> None:
        if item != self.in_list:
            markup = ("<ul>" if item else "</ul>") + markup
        size = len(markup.encode("utf-8"))
        if size > self.room:
            raise _Full
        self.parts.append(markup)
        self.in_list = item
        self.room -= size
        self.blocks += 1

    def body(self) -> str:
        return "".join(self.parts) + ("</ul>" if self.in_list else "")


def docx_html(data: bytes, name: str) -> Made:
    """The Word file in ``data`` as an HTML page; ``name`` is said in errors."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError):
        raise InputError(f"{name}: not a Word file (not a readable zip)") from None
    with package:
        main = _main_part(package, name)
        styles = _styles(package, name)
        title = _title(package, name)
        head = f"<html><head><title>{html.escape(title)}</title></head><body>"
        tail = "</body></html>"
        page = _Page(MAX_PAGE_BYTES - len(head.encode("utf-8")) - len(tail) - len("</ul>"))
        cut = None
        try:
            for element in _body_children(package, main, name):
                _block(element, styles, page)
        except _Full:
            cut = f"cut after {page.blocks:,} paragraphs: its text reached the "
            cut += f"{MAX_PAGE_BYTES >> 20} MiB cap of a page"
        except _PartTooLarge:
            cut = f"cut after {page.blocks:,} paragraphs: its text part is larger than "
            cut += f"{MAX_PART_BYTES >> 20} MiB unpacked"
    return Made((head + page.body() + tail).encode("utf-8"), cut=cut)


class _PartTooLarge(Exception):
    """A part unpacked past ``MAX_PART_BYTES``."""


def _main_part(package: zipfile.ZipFile, name: str) -> str:
    """The main document part's name, as the package's relationships give it; a target
    that leads out of the package (``../``, an absolute URL) is refused."""
    root = _parsed(package, "_rels/.rels", name)
    if root is None:
        raise InputError(f"{name}: not a Word file (no package relationships)")
    for relation in root.iter(_RELS):
        if relation.get("Type") in _OFFICE_DOCUMENT:
            target = relation.get("Target") or ""
            if relation.get("TargetMode") == "External" or ":" in target:
                break
            part = posixpath.normpath(target.lstrip("/"))
            if part.startswith("../") or part in ("..", "."):
                raise InputError(f"{name}: its main part leads out of the file, not read")
            return part
    raise InputError(f"{name}: not a Word file (no main document part)")


@dataclass(frozen=True)
class _Styles:
    """Paragraph style ids that are headings, with their level (1-6), and those that are
    list items (a numbering in the style, as Word's ``List Bullet`` has)."""

    headings: dict[str, int] = field(default_factory=dict)
    lists: frozenset[str] = frozenset()


def _styles(package: zipfile.ZipFile, name: str) -> _Styles:
    root = _parsed(package, "word/styles.xml", name)
    headings: dict[str, int] = {}
    lists = set()
    for style in root.iter(w("style")) if root is not None else ():
        ident = style.get(w("styleId"))
        if ident is None:
            continue
        named = style.find(w("name"))
        found = _HEADING_NAME.match(named.get(w("val"), "") if named is not None else "")
        level = int(found.group(1) or 1) if found is not None else _outline(style)
        if level is not None:
            headings[ident] = level
        elif style.find(f"{w('pPr')}/{w('numPr')}") is not None:
            lists.add(ident)
    return _Styles(headings, frozenset(lists))


def _outline(element: etree._Element) -> int | None:
    """The heading level an outline level (0-8) in a style or paragraph says, at most 6;
    9, "body text", is none."""
    outline = element.find(f"{w('pPr')}/{w('outlineLvl')}")
    value = outline.get(w("val"), "") if outline is not None else ""
    return min(int(value) + 1, 6) if value.isdigit() and int(value) < 9 else None


def _title(package: zipfile.ZipFile, name: str) -> str:
    root = _parsed(package, "docProps/core.xml", name)
    found = root.find(_TITLE) if root is not None else None
    return normalize_space(found.text or "")[:MAX_TITLE] if found is not None else ""


def _parsed(package: zipfile.ZipFile, part: str, name: str) -> etree._Element | None:
    """A small part (relationships, styles, properties) parsed whole, or None when the
    package has none; past ``MAX_PART_BYTES``, or broken, it is an ``InputError``."""
    parser = _parser()
    try:
        for chunk in _chunks(package, part, name):
            parser.feed(chunk)
        return parser.close()
    except KeyError:
        return None
    except _PartTooLarge:
        raise InputError(f"{name}: its {part} is larger than {MAX_PART_BYTES >> 20} MiB") from None
    except etree.XMLSyntaxError:
        raise InputError(f"{name}: not a readable Word file ({part} is broken)") from None


def _body_children(package: zipfile.ZipFile, part: str, name: str) -> Iterator[etree._Element]:
    """The body's paragraphs and tables, each whole, as the part is unpacked and parsed: a
    part is never held whole, and each block is freed once it has been read."""
    parser = etree.XMLPullParser(
        events=("end",), tag=(w("p"), w("tbl"), w("sdt")), resolve_entities=False,
        no_network=True, load_dtd=False, huge_tree=False,
    )  # fmt: skip
    try:
        for chunk in _chunks(package, part, name):
            parser.feed(chunk)
            yield from _ended(parser)
        parser.close()
        yield from _ended(parser)
    except KeyError:
        raise InputError(f"{name}: not a Word file (no {part})") from None
    except etree.XMLSyntaxError:
        raise InputError(f"{name}: not a readable Word file (its text part is broken)") from None


def _ended(parser: etree.XMLPullParser) -> Iterator[etree._Element]:
    for _, element in parser.read_events():
        parent = element.getparent()
        if parent is None or parent.tag != w("body"):
            continue  # inside a table or a content control: read with it
        yield element
        element.clear()
        while element.getprevious() is not None:
            del parent[0]


def _chunks(package: zipfile.ZipFile, part: str, name: str) -> Iterator[bytes]:
    """The part's unpacked bytes, chunk by chunk, until ``MAX_PART_BYTES``."""
    try:
        stream = package.open(part)
    except RuntimeError:  # an encrypted member
        raise InputError(f"{name}: encrypted (it needs a password)") from None
    except (zipfile.BadZipFile, NotImplementedError) as error:
        raise InputError(f"{name}: not a readable zip ({error})") from None
    read = 0
    with stream:
        while True:
            try:
                chunk = stream.read(_CHUNK)
            except (zipfile.BadZipFile, OSError, EOFError) as error:
                raise InputError(f"{name}: not a readable zip ({error})") from None
            if not chunk:
                return
            read += len(chunk)
            if read > MAX_PART_BYTES:
                raise _PartTooLarge
            yield chunk


def _parser() -> etree.XMLParser:
    """A parser that reads no DTD, expands no entity and reaches no network (the same
    options as the body's, above)."""
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _block(element: etree._Element, styles: _Styles, page: _Page) -> None:
    """One paragraph, table or content control of the body, added to the page."""
    if element.tag == w("tbl"):
        page.add(_table(element))
    elif element.tag == w("sdt"):
        for child in element.iterfind(f"{w('sdtContent')}/*"):
            if child.tag in (w("p"), w("tbl"), w("sdt")):
                _block(child, styles, page)
    else:
        text = html.escape(_text(element))
        if not text.strip():
            return
        named = element.find(f"{w('pPr')}/{w('pStyle')}")
        style = named.get(w("val"), "") if named is not None else ""
        level = _outline(element) or styles.headings.get(style)
        if level is not None:
            page.add(f"<h{level}>{text}</h{level}>")
        elif style in styles.lists or element.find(f"{w('pPr')}/{w('numPr')}") is not None:
            page.add(f"<li>{text}</li>", item=True)
        else:
            page.add(f"<p>{text}</p>")


def _table(table: etree._Element) -> str:
    rows = []
    for row in table.iterfind(w("tr")):
        cells = "".join(
            "<td>" + html.escape(" ".join(_text(p) for p in cell.iter(w("p")))) + "</td>"
            for cell in row.iterfind(w("tc"))
        )
        rows.append(f"<tr>{cells}</tr>")
    return "<table>" + "".join(rows) + "</table>"


def _text(paragraph: etree._Element) -> str:
    """A paragraph's text: its runs' text (inserted text included, deleted text not), a tab
    or a break as a space."""
    pieces = []
    for node in paragraph.iter(w("t"), w("tab"), w("br"), w("cr")):
        pieces.append(node.text or "" if node.tag == w("t") else " ")
    return "".join(pieces)
