"""A source's pruned content as the shortest passages a claim can be backed by, or quoted as
an answer.

A quote under an answer must be small enough to read at a glance and whole enough to say
the thing on its own. Prose is cut into sentences; a table row is read with its table's
header row, a list item with the line that leads into its list (``html.headings``), a
definition (``<dd>``) with its term (``<dt>``), since "8. | Freiburg (14 Pkt)", "Huawei" or
"5,95€" says nothing without "Rang | Verein", "the brands are the following:" or
"Versandkosten". The context is kept apart from the passage's own words: it is shown before
them and matched with them, and a number in it counts as found.

Rows, items and definitions also carry what the extractive reader needs to quote one
readably (``courgettes, Weight: 12.4 kg (Harvest)``): a row's cells and its header's cells,
in line, and the ``label`` of its table, list or definition list, the table's caption or
else the nearest heading before it, which is matched with the passage too. Both the
evidence check (``evidence/``) and the extractive reader (``reader/``) read sources here,
below them both.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from lxml import etree

from htmlrag_chat.html.dom import Element, drop, parse
from htmlrag_chat.html.headings import (
    cell_texts,
    header_cells,
    heading_before,
    structure_context,
)
from htmlrag_chat.html.text import normalize_space, visible_text

# A sentence ends at ., ! or ? before a space and a capital, digit or opening quote, or at
# a CJK end mark (no space follows one). A period after a lone letter or a number of one or
# two digits ("z. B.", "28. September", "3. Liga") ends an abbreviation or an ordinal.
_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“„«(\[]?[^\W_a-z])|(?<=[\u3002\uff01\uff1f])")
_NOT_AN_END = re.compile(
    r"(?:\b[^\W\d_]|(?<!\d)\d{1,2}|\b(?:bzw|ca|vs|dr|mr|mrs|ms|nr|st))\.\Z", re.I
)
_WORD = re.compile(r"[^\W_]")
_MARK = "\ue0ff"  # a private-use character: what stands in for a row or an item
ASKING = ("?", "\uff1f")  # a passage ending so asks
MAX_CHARS = 600  # a longer "sentence" (a run without end marks) is cut at this many characters
MAX_LABEL = 120  # a caption or heading longer than this is content, not a label
SENTENCE, ROW, ITEM, DEFINITION = "sentence", "row", "item", "definition"
_STRUCTURED = ("tr", "li", "dd")
_CONTAINERS = {"tr": ("table",), "li": ("ul", "ol"), "dd": ("dl",)}


@dataclass(frozen=True)
class Passage:
    """A sentence, a table row, a list item or a definition of source ``source``."""

    source: int
    text: str  # the passage's own words
    context: str = ""  # the row's header row, the item's lead-in, the definition's term
    kind: str = SENTENCE
    cells: tuple[str, ...] = ()  # a row's cells, empty ones included
    header: tuple[str, ...] = ()  # its header row's cells, empty ones included; else ()
    label: str = ""  # its table's caption, else the heading before its table or list

    @property
    def quote(self) -> str:
        """The passage as shown: its context first, the passage after it."""
        return f"{self.context} … {self.text}" if self.context else self.text

    @property
    def asks(self) -> bool:
        """A question ("Gefällt dir unser Klettermagazin?") states nothing, so it backs
        nothing: it shares its words with a claim without saying it is so."""
        return self.text.rstrip("\"'”»)").endswith(ASKING)

    @property
    def matched(self) -> str:
        """What claims are matched against: the label's and the context's words count as
        the passage's."""
        return " ".join(part for part in (self.label, self.context, self.text) if part)


def passages(number: int, html: str) -> list[Passage]:
    """Every passage of a source's pruned HTML, in document order: rows, list items,
    definitions, and the sentences of the rest of its text."""
    root = parse(html)
    runs: dict[Element, Element] = {}
    headings: dict[Element, str] = {}
    structured = [el for el in root.iter(*_STRUCTURED) if isinstance(el.tag, str)]
    own: dict[Element, Passage] = {}
    described: list[Element] = []  # the <dt> read as definitions' context, not as prose
    for element in structured:
        label = _label(element, headings)
        if element.tag == "tr":
            cells = cell_texts(element)
            text = " | ".join(cell for cell in cells if cell)
            header = header_cells(element, runs)
            context = structure_context(element, runs)
            passage = Passage(number, _cap(text), context, ROW, cells, header, label)
        elif element.tag == "li":
            text = _item_text(element)
            context = structure_context(element, runs)
            passage = Passage(number, _cap(text), context, ITEM, label=label)
        else:
            text = _item_text(element)
            named = _terms_of(element)
            term = " / ".join(normalize_space(visible_text(dt)) for dt in named)
            passage = Passage(number, _cap(text), term, DEFINITION, label=label)
            if _WORD.search(text):
                described += named  # an empty description leaves its term to the prose
        if _WORD.search(text):
            own[element] = passage
    for dt in described:
        drop(dt)
    # Each outermost row, item or definition gives way to a line of its own that stands for
    # it and the rows and items inside it, so that the prose around it keeps its place.
    groups: dict[str, list[Passage]] = {}
    for element in structured:
        if any(ancestor.tag in _STRUCTURED for ancestor in element.iterancestors()):
            continue
        mark = f"{_MARK}{len(groups)}{_MARK}"
        inside = [element, *(e for e in element.iter(*_STRUCTURED) if e is not element)]
        groups[mark] = [own[e] for e in inside if e in own]
        stand_in = etree.Element("p")
        stand_in.text, stand_in.tail = mark, element.tail
        parent = element.getparent()
        assert parent is not None  # a row or item is inside the <html> element parse() gives
        parent.replace(element, stand_in)
    found: list[Passage] = []
    for line in visible_text(root, lines=True).splitlines():
        if line in groups:
            found += groups[line]
        else:
            found += [Passage(number, sentence) for sentence in sentences(line)]
    return found


def sentences(line: str) -> list[str]:
    """The sentences of one line of text, each at most ``MAX_CHARS`` long."""
    pieces: list[str] = []
    start = 0
    for match in _END.finditer(line):
        piece = line[start : match.start()]
        if _NOT_AN_END.search(piece):
            continue
        pieces.append(piece)
        start = match.end()
    pieces.append(line[start:])
    return [_cap(piece) for piece in map(str.strip, pieces) if _WORD.search(piece)]


def _label(element: Element, headings: dict[Element, str]) -> str:
    """The caption of the table a row is in, else the nearest heading before the table,
    list or definition list that ``element`` is in."""
    container = next(element.iterancestors(*_CONTAINERS[str(element.tag)]), None)
    if container is None:
        return ""
    caption = next((c for c in container if c.tag == "caption"), None)
    text = normalize_space(visible_text(caption)) if caption is not None else ""
    text = text or heading_before(container, headings)
    return text if len(text) <= MAX_LABEL else ""


def _terms_of(definition: Element) -> list[Element]:
    """The ``<dt>`` elements a ``<dd>`` describes: those right before it, or before the
    ``<dd>`` elements right before it (a term with several descriptions)."""
    named: list[Element] = []
    for before in definition.itersiblings(preceding=True):
        if before.tag == "dt":
            named.insert(0, before)
        elif named or before.tag != "dd":
            break
    return named


def _item_text(item: Element) -> str:
    """The item's own text: nested lists and tables are passages of their own."""
    alone = copy.deepcopy(item)
    alone.tail = None
    for nested in list(alone.iter("ul", "ol", "table", "dl")):
        if nested is not alone and nested.getparent() is not None:
            drop(nested)
    return normalize_space(visible_text(alone))


def _cap(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS].rsplit(" ", 1)[0] + " …"
