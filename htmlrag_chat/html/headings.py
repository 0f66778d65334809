"""The heading each block sits under, so that a block can be judged with its context.

An answer paragraph often names none of the question's words: "He won it in 2011" sits
under "Career" under a page titled "Rory McIlroy". Scoring the paragraph alone misses it;
scoring it with its page title and nearest heading does not. Lists and tables are read the
same way: a table row with its table's header row ("Rang | DFL-Tabelle | Wahre Tabelle"
for "8. | Freiburg (14 Pkt) | Gladbach (12 Pkt)"), a list item with the line that
introduces its list ("Según el sitio, las marcas son las siguientes:" for "Huawei"). The
blocks themselves are left as they are: the context is only read by scorers.

Generated result pages often write a table as a run of one-row tables, one per row, the
header in the first (``<table><tr><th>Domaine</th>...</table><table><tr><td>Finance et
assurance</td><td>167</td>...</table>``); a run of adjacent one-row tables is read as one
table, each row under the nearest header row before it, else under the run's first row.
A header row's text is cut, not dropped, when it is long: nine columns of "Nombre
d'articles signés par des français" still label the row.
"""

from __future__ import annotations

import bisect

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.text import normalize_space, visible_text

HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_MAX_CHARS = 200  # a heading longer than this is content, not a label
_MAX_WRAPPERS = 2  # elements a list may open before its lead-in is too far to tell


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
    runs: dict[Element, Element] = {}
    for block in tree.blocks:
        title = tree.document.pages[block.page].title
        before = bisect.bisect_left(marks, block.position) - 1
        heading = ""
        if before >= 0 and marks[before] > page_start[block.page]:
            heading = texts[before]
        parts = (title, heading, structure_context(block.element, runs))
        context.append(" - ".join(part for part in parts if part and part != block.text))
    return context


def structure_context(element: Element, runs: dict[Element, Element]) -> str:
    """The header row of the table row ``element`` is or sits in (a one-row table counts as
    its row), or the line that leads into the list that it is or whose item it is or sits
    in; "" for neither, or for the header row itself. ``runs`` keeps what ``_run_header``
    found for the one-row tables of a document between calls."""
    for ancestor in (element, *element.iterancestors()):
        if ancestor.tag == "tr":
            return _header_text(ancestor, runs)
        if ancestor.tag == "li":
            return _lead_in(ancestor.getparent())
        if ancestor.tag in ("ul", "ol"):  # a whole list as one block
            return _lead_in(ancestor)
        if ancestor.tag == "table":
            rows = _rows(ancestor)
            return _header_text(rows[0], runs) if len(rows) == 1 else ""
        if ancestor.tag == "body":
            return ""
    return ""


def _header_text(row: Element, runs: dict[Element, Element]) -> str:
    header = _header_row(row, runs)
    if header is None or header is row:
        return ""
    cells = [normalize_space(visible_text(cell)) for cell in header]
    text = " | ".join(cell for cell in cells if cell)
    return _cut(text) if _is_header(header) else _short(text)


def header_cells(row: Element, runs: dict[Element, Element]) -> tuple[str, ...]:
    """The cells of the table row ``row``'s header row (as ``structure_context`` finds it),
    empty ones included so that they line up with the row's, when it is marked as one (its
    cells ``<th>``, or in ``<thead>``); none for a header row itself, a row without one, or
    a table whose first row is only its first row (an ingredient list's "1 Pck. | Milch"
    names no column)."""
    header = _header_row(row, runs)
    if header is None or header is row:
        return ()
    parent = header.getparent()
    marked = _is_header(header) or (parent is not None and parent.tag == "thead")
    return cell_texts(header) if marked else ()


def cell_texts(row: Element) -> tuple[str, ...]:
    """The text of each cell of a table row, in order, empty ones included."""
    return tuple(normalize_space(visible_text(cell)) for cell in row if cell.tag in ("td", "th"))


def heading_before(element: Element, headings: dict[Element, str]) -> str:
    """The text of the nearest heading before ``element`` in document order, "" for none
    (or one longer than a label). ``headings`` keeps, for each element of the document
    met so far, the heading it sits under, filled on the first call."""
    if not headings:
        current = ""
        for each in element.getroottree().getroot().iter():
            if each.tag in HEADING_TAGS:
                text = normalize_space(visible_text(each))
                current = text if len(text) <= _MAX_CHARS else ""
            headings[each] = current
    return headings.get(element, "")


def _header_row(row: Element, runs: dict[Element, Element]) -> Element | None:
    """The row's table's first row of ``<th>`` cells, else its first row; for the row of a
    one-row table, the header of the run of one-row tables before it (``_run_header``)."""
    table = next(row.iterancestors("table"), None)
    if table is None:
        return None
    rows = _rows(table)
    if len(rows) > 1:
        return next((each for each in rows if _is_header(each)), rows[0])
    before = _previous_one_row_table(table)
    return row if before is None or _is_header(row) else _run_header(before, runs)


def _run_header(table: Element, runs: dict[Element, Element]) -> Element:
    """The header of the run of one-row tables that ends with ``table``: the row of the
    nearest one that is a header row, else of the run's first table. Walked back once per
    run, not once per row: ``runs`` remembers each table's answer."""
    walked: list[Element] = []
    current = table
    while current not in runs:
        walked.append(current)
        row = _rows(current)[0]
        before = _previous_one_row_table(current)
        if _is_header(row) or before is None:
            runs[current] = row
            break
        current = before
    header = runs[current]
    for each in walked:
        runs[each] = header
    return header


def _previous_one_row_table(table: Element) -> Element | None:
    """The one-row table right before ``table``, with nothing but space between them."""
    before = table.getprevious()
    if before is None or before.tag != "table" or (before.tail or "").strip():
        return None
    return before if len(_rows(before)) == 1 else None


def _rows(table: Element) -> list[Element]:
    """A table's own rows (not those of tables nested in it)."""
    return [row for row in table.iter("tr") if next(row.iterancestors("table")) is table]


def _is_header(row: Element) -> bool:
    """A row of ``<th>`` cells only."""
    cells = [cell for cell in row if isinstance(cell.tag, str)]
    return bool(cells) and all(cell.tag == "th" for cell in cells)


def _lead_in(items: Element | None) -> str:
    """The text just before a list: the element before it (not another list or a table), or
    the loose text of the item a nested list sits in. A list that opens its wrapper (a
    ``<div>``, a dropdown's custom element) is led in by what comes before the wrapper:
    ``<button>Whatsapp Radio Bío Bío</button><b-modal><ul>...``, up to ``_MAX_WRAPPERS``."""
    if items is None:
        return ""
    for _ in range(_MAX_WRAPPERS + 1):
        before = items.getprevious()
        if before is not None:
            if before.tag in ("ul", "ol", "table"):
                return ""
            return _short(normalize_space(visible_text(before)))
        parent = items.getparent()
        if parent is None:
            return ""
        loose = normalize_space(parent.text or "")  # the text before its first child
        if loose or parent.tag in ("li", "body", "html"):
            return _short(loose)
        items = parent
    return ""


def _short(text: str) -> str:
    return text if len(text) <= _MAX_CHARS else ""


def _cut(text: str) -> str:
    """A header's text up to ``_MAX_CHARS``, cut between words."""
    if len(text) <= _MAX_CHARS:
        return text
    return text[: _MAX_CHARS + 1].rsplit(maxsplit=1)[0]
