"""The heading each block sits under, so that a block can be judged with its context.

An answer paragraph often names none of the question's words: "He won it in 2011" sits
under "Career" under a page titled "Rory McIlroy". Scoring the paragraph alone misses it;
scoring it with its page title and nearest heading does not. Lists and tables are read the
same way: a table row with its table's header row ("Rang | DFL-Tabelle | Wahre Tabelle"
for "8. | Freiburg (14 Pkt) | Gladbach (12 Pkt)"), a list item with the line that
introduces its list ("Según el sitio, las marcas son las siguientes:" for "Huawei"). The
blocks themselves are left as they are: the context is only read by scorers.
"""

from __future__ import annotations

import bisect

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.text import normalize_space, visible_text

HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_MAX_CHARS = 200  # a heading longer than this is content, not a label


def heading_context(tree: BlockTree) -> list[str]:
    """For each block, its page's title, the nearest heading before it on its page and, in a
    table or list, its header row or the list's lead-in (any may be missing), as one line."""
    root = tree.document.root
    position = {element: index for index, element in enumerate(root.iter())}
    marks: list[int] = []
    texts: list[str] = []
    for element in root.iter(*HEADING_TAGS):
        text = normalize_space(visible_text(element))[:_MAX_CHARS]
        if text:
            marks.append(position[element])
            texts.append(text)
    page_start = [position[page] for page in root]
    context = []
    for block in tree.blocks:
        title = tree.document.pages[block.page].title
        before = bisect.bisect_left(marks, block.position) - 1
        heading = ""
        if before >= 0 and marks[before] > page_start[block.page]:
            heading = texts[before]
        parts = (title, heading, structure_context(block.element))
        context.append(" - ".join(part for part in parts if part and part != block.text))
    return context


def structure_context(element: Element) -> str:
    """The header row of the table row ``element`` is or sits in, or the line that leads
    into the list that it is or whose item it is or sits in; "" for neither, or for the
    header row itself."""
    for ancestor in (element, *element.iterancestors()):
        if ancestor.tag == "tr":
            return _header_row(ancestor)
        if ancestor.tag == "li":
            return _lead_in(ancestor.getparent())
        if ancestor.tag in ("ul", "ol"):  # a whole list as one block
            return _lead_in(ancestor)
        if ancestor.tag in ("table", "body"):
            return ""
    return ""


def _header_row(row: Element) -> str:
    """The text of the row's table's first row holding ``<th>`` cells, else its first row,
    unless that is ``row`` itself."""
    table = next(row.iterancestors("table"), None)
    if table is None:
        return ""
    rows = [each for each in table.iter("tr") if next(each.iterancestors("table")) is table]
    header = next((each for each in rows if each.find("th") is not None), rows[0])
    if header is row:
        return ""
    return _short(" | ".join(normalize_space(visible_text(cell)) for cell in header))


def _lead_in(items: Element | None) -> str:
    """The text just before a list: the element before it (not another list or a table), or
    the loose text of the item a nested list sits in."""
    if items is None:
        return ""
    before = items.getprevious()
    if before is not None:
        if before.tag in ("ul", "ol", "table"):
            return ""
        return _short(normalize_space(visible_text(before)))
    parent = items.getparent()
    if parent is not None and parent.tag == "li":
        return _short(normalize_space(parent.text or ""))
    return ""


def _short(text: str) -> str:
    return text if len(text) <= _MAX_CHARS else ""
