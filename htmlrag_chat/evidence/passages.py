"""A source's pruned content as the shortest passages a claim can be backed by.

A quote under an answer must be small enough to read at a glance and whole enough to say
the thing on its own. Prose is cut into sentences; a table row is read with its table's
header row, a list item with the line that leads into its list (``html.headings``), since
"8. | Freiburg (14 Pkt)" or "Huawei" says nothing without "Rang | Verein" or "the brands
are the following:". The context is kept apart from the passage's own words: it is shown
before them and matched with them, and a number in it counts as found.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from lxml import etree

from htmlrag_chat.html.dom import Element, drop, parse
from htmlrag_chat.html.headings import structure_context
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


@dataclass(frozen=True)
class Passage:
    """A sentence, a table row or a list item of source ``source``."""

    source: int
    text: str  # the passage's own words
    context: str = ""  # the row's header row or the item's lead-in, else ""

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
        """What claims are matched against: the context's words count as the passage's."""
        return f"{self.context} {self.text}" if self.context else self.text


def passages(number: int, html: str) -> list[Passage]:
    """Every passage of a source's pruned HTML, in document order: rows, list items, and
    the sentences of the rest of its text."""
    root = parse(html)
    runs: dict[Element, Element] = {}
    structured = [el for el in root.iter("tr", "li") if isinstance(el.tag, str)]
    own: dict[Element, Passage] = {}
    for element in structured:
        text = _row_text(element) if element.tag == "tr" else _item_text(element)
        if _WORD.search(text):
            own[element] = Passage(number, _cap(text), structure_context(element, runs))
    # Each outermost row or item gives way to a line of its own that stands for it and the
    # rows and items inside it, so that the prose around it keeps its place.
    groups: dict[str, list[Passage]] = {}
    for element in structured:
        if any(ancestor.tag in ("tr", "li") for ancestor in element.iterancestors()):
            continue
        mark = f"{_MARK}{len(groups)}{_MARK}"
        inside = [element, *(e for e in element.iter("tr", "li") if e is not element)]
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


def _row_text(row: Element) -> str:
    cells = (normalize_space(visible_text(cell)) for cell in row if cell.tag in ("td", "th"))
    return " | ".join(cell for cell in cells if cell)


def _item_text(item: Element) -> str:
    """The item's own text: nested lists and tables are passages of their own."""
    alone = copy.deepcopy(item)
    alone.tail = None
    for nested in list(alone.iter("ul", "ol", "table")):
        if nested is not alone and nested.getparent() is not None:
            drop(nested)
    return normalize_space(visible_text(alone))


def _cap(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return text[:MAX_CHARS].rsplit(" ", 1)[0] + " …"
