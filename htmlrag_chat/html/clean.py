"""Query-independent cleaning (HtmlRAG section 3.2), lossless for visible text.

What goes: invisible content (scripts, styles, templates, hidden elements, the head except
its title, short ``<noscript>`` notices, ruby annotations), attributes, empty elements,
wrappers that only wrap one child, and whitespace that a browser would not show. What
stays: every text run a person can see, and the tags that give it structure (headings,
lists, tables), which is why HtmlRAG keeps HTML at all.

The same structural compression (``compress``) runs again after pruning, so it is written
to be idempotent and to work on any subtree.
"""

from __future__ import annotations

import re

from lxml import etree

from htmlrag_chat.base.specials import ANGLE_TOKENS
from htmlrag_chat.html.dom import (
    BLOCK_TAGS,
    INVISIBLE_TAGS,
    Element,
    drop,
    is_block,
    join_text,
    parse,
    put_text_before,
)
from htmlrag_chat.html.text import count_words, visible_text

# Ruby annotations (furigana) repeat the reading of the text they annotate; kept, they split
# every annotated word in two (子<rt>こ</rt>ども reads "子こども").
RUBY_ANNOTATION_TAGS = frozenset({"rt", "rp"})

# <noscript> is what a reader without JavaScript sees (we are one), and some pages put their
# whole article there. Short ones ("please enable JavaScript", tracking pixels) are dropped.
NOSCRIPT_MIN_WORDS = 25

# Inline wrappers that mean nothing to a reader once attributes are gone. They are unwrapped
# (their text joins the parent's) in C by lxml: the text reads the same, as a browser renders
# it inline anyway, and the tree has a fifth fewer elements. <code>, <sub>, <sup> and <q>
# stay: they change what the text means.
INLINE_TAGS = frozenset(
    """
    span font a b i u s em strong small big tt nobr abbr acronym bdi bdo mark ins del time
    label data cite dfn var samp kbd
    """.split()
)

# A block wrapper of one of these kinds adds no meaning: when it holds a single child and no
# text the pair is merged and the more meaningful tag survives.
GENERIC_TAGS = frozenset(
    """
    div section article main header footer aside nav head center figure address fieldset
    form hgroup picture noscript
    """.split()
)

# Containers whose children must keep their own tags (a <tr> holds cells, a <ul> items).
CONTAINER_TAGS = frozenset(
    """
    html root table thead tbody tfoot tr ul ol dl colgroup
    """.split()
)

# Parts of a table, which mean something only inside one.
TABLE_PARTS = ("thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup", "col")

# Text whose whitespace is visible as typed.
PREFORMATTED_TAGS = frozenset({"pre", "textarea", "listing", "plaintext", "xmp"})

_SPANS = ("colspan", "rowspan")
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
_SPACES = re.compile(r"  +")
_MAYBE_HIDDEN = etree.XPath("//*[@hidden or @style]")
_PREFORMATTED_START = re.compile(rb"<(?:pre|textarea|listing|xmp)\b", re.IGNORECASE)
_PREFORMATTED_RUN = re.compile(
    rb"(<(pre|textarea|listing|xmp)\b.*?</\2\s*>)", re.IGNORECASE | re.DOTALL
)


def clean_html(html: str | bytes) -> Element:
    """Parse a page (text, or UTF-8 bytes) and clean it; returns its ``<html>`` element."""
    data = html.encode("utf-8", "replace") if isinstance(html, str) else html
    root = parse(collapse_whitespace(data))
    clean_tree(root)
    return root


def collapse_whitespace(data: bytes) -> bytes:
    """Collapse whitespace runs to one space outside preformatted elements.

    Done on the page bytes before parsing: one pass in C instead of a regex call per text
    node, and the parser then makes fewer, shorter strings.
    """
    if not _PREFORMATTED_START.search(data):
        return b" ".join(data.split())
    parts = _PREFORMATTED_RUN.split(data)
    # split() yields text, then (whole match, tag name) pairs: collapse only the text.
    return b"".join(
        b" ".join(part.split()) if index % 3 == 0 else part
        for index, part in enumerate(parts)
        if index % 3 != 2
    )


def clean_tree(root: Element) -> None:
    """Clean a parsed page in place."""
    _keep_foreign_objects(root)
    _unwrap_stray_table_parts(root)
    etree.strip_elements(root, *INVISIBLE_TAGS, *RUBY_ANNOTATION_TAGS, with_tail=False)
    for element in _MAYBE_HIDDEN(root):
        if "hidden" in element.attrib or _HIDDEN_STYLE.search(element.get("style", "")):
            drop(element)
    for head in root.iter("head"):
        for child in list(head):
            if child.tag != "title":
                drop(child)
    for noscript in list(root.iter("noscript")):
        if count_words(visible_text(noscript)) < NOSCRIPT_MIN_WORDS:
            drop(noscript)
    # After hidden elements are gone, so that no hidden text is unwrapped into view. An
    # element named like a chat-template token (<start_of_turn>) goes too, keeping its text.
    etree.strip_tags(root, *INLINE_TAGS, *ANGLE_TOKENS)
    _compress(root, strip_attributes=True)
    _closed_parents_are_divisions(root)


# A parent the HTML parser (libxml2's, as lxml builds it) ends where one of these children
# starts: measured by parsing ``<P><C>0</C>1</P>2`` for each pair.
_CLOSED_BY = {
    "p": BLOCK_TAGS - {"br"},
    "li": frozenset({"li"}),
    "dd": frozenset({"dt"}),
    "dt": frozenset({"dd", "dl"}),
    "pre": frozenset({"dd", "dl", "dt", "fieldset", "form", "li", "table", "ul"}),
    "ul": frozenset({"address", "form", "pre"}),
    "ol": frozenset({"form"}),
    "dl": frozenset({"form", "li"}),
}
# The children that end a heading the same way; the heading keeps its rank and they become
# divisions, as a heading is what names the blocks under it.
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
_ENDS_HEADING = frozenset({"p", "li", "fieldset", "form"})


def _closed_parents_are_divisions(root: Element) -> None:
    """A parent holding a child that ends it (``_CLOSED_BY``: a ``<p>`` holding a block left
    in it once the ``<b>`` around it was unwrapped, an ``<li>`` holding an ``<li>`` once a
    ``<div>`` between them merged away) becomes a ``<div>``, and so does a paragraph or
    item right inside a heading (a heading holding a table is one itself): HTML ends the
    parent where such a child starts, so the cleaned page, parsed again, moved the text
    after the child out of the parent and glued it to the words after it ("0 0 0" read
    again as "0 00")."""
    for parent in list(root.iter(*_CLOSED_BY, *_HEADINGS)):  # one walk: cleaning is hot
        tag = parent.tag
        if tag in _CLOSED_BY:
            if any(child.tag in _CLOSED_BY[tag] for child in parent):
                parent.tag = "div"
        elif tag in _HEADINGS:
            if any(child.tag == "table" for child in parent):  # no heading, but a box
                parent.tag = "div"
                continue
            for child in parent:
                if child.tag in _ENDS_HEADING:
                    child.tag = "div"


def _unwrap_stray_table_parts(root: Element) -> None:
    """A ``<td>`` or ``<tr>`` outside any table (which a browser ignores) becomes a
    ``<div>``: libxml2 keeps it, but parsing its own output again it drops the tag, so the
    text on either side ran together and cleaning was not a fixed point."""
    for element in list(root.iter(*TABLE_PARTS)):
        if next(element.iterancestors("table"), None) is None:
            element.tag = "div"


def _keep_foreign_objects(root: Element) -> None:
    """HTML inside an SVG ``<foreignObject>`` is shown as HTML: it moves out in front of
    its drawing (as a ``<div>``) before the drawing goes as invisible."""
    for found in list(root.iter("foreignobject")):
        drawing = next(found.iterancestors("svg"), None)
        if drawing is not None:
            found.tail = None
            found.tag = "div"
            drawing.addprevious(found)


def compress(root: Element) -> None:
    """Remove empty elements, merge single-child wrapper chains, trim invisible whitespace.

    Runs bottom-up in one pass, so a chain ``<div><div><p>x</p></div></div>`` collapses fully
    and an element emptied by its children's removal goes too. The root itself is kept.
    """
    _compress(root, strip_attributes=False)


def _compress(root: Element, strip_attributes: bool) -> None:
    """``compress``; when cleaning, the same pass also drops attributes (one Python loop
    over the elements is most of the cost of cleaning)."""
    for element in reversed(list(root.iter())):
        if not isinstance(element.tag, str):
            drop(element)
            continue
        if strip_attributes and element.attrib:
            _strip_attributes(element)
        if element is not root:
            if element.tag == "br":
                element.tail = join_text(" ", element.tail)
                drop(element)
                continue
            if len(element) == 0 and not (element.text and element.text.strip()):
                _drop_empty(element)
                continue
            if len(element) == 1:
                element = _merge_single_child(element)
        _trim(element)


def _strip_attributes(element: Element) -> None:
    """Drop an element's attributes but the cell spans that keep a table readable."""
    attrib = element.attrib
    spans = []
    if element.tag in ("td", "th"):
        spans = [(name, attrib.get(name, "").strip()) for name in _SPANS]
    attrib.clear()
    for name, value in spans:
        if value.isdigit() and value != "1":
            attrib[name] = value


def _drop_empty(element: Element) -> None:
    """Drop an element with no visible text; a lone space inside it still separates words."""
    if element.text and not is_block(element):
        element.tail = join_text(" ", element.tail)
    drop(element)


def _merge_single_child(parent: Element) -> Element:
    """Merge ``parent`` with its only child if one of them adds no meaning; returns the
    survivor. Whitespace around the child (a word separator) is kept."""
    child = parent[0]
    if parent.tag in CONTAINER_TAGS or not isinstance(child.tag, str):
        return parent
    before, after = parent.text, child.tail
    if (before and before.strip()) or (after and after.strip()):
        return parent
    grandparent = parent.getparent()
    if child.tag in GENERIC_TAGS:
        # The parent absorbs the child: <td><div>x</div></td> -> <td>x</td>.
        grandchildren = list(child)
        parent.text = join_text(before, child.text)
        parent.remove(child)
        parent.extend(grandchildren)
        if grandchildren:
            grandchildren[-1].tail = join_text(grandchildren[-1].tail, after)
        else:
            parent.text = join_text(parent.text, after)
        return parent
    if parent.tag in GENERIC_TAGS and grandparent is not None:
        # The child replaces the parent: <div><div><p>x</p></div></div> -> <p>x</p>.
        if before:
            put_text_before(parent, before)
        child.tail = join_text(after, parent.tail)
        grandparent.replace(parent, child)
        return child
    return parent


def _trim(element: Element) -> None:
    """Fold runs of spaces, and drop spaces at block boundaries, where a browser shows none:
    at the start and end of a block's content, and on either side of a block child.

    Each element trims its own text and tail (and, for a block, its last child's tail, which
    may have arrived by a merge), so the bottom-up pass touches every text node about once.
    """
    block = element.tag in BLOCK_TAGS
    if element.tag not in PREFORMATTED_TAGS:
        text = element.text
        if text:
            if "  " in text:  # unwrapped inline tags leave their spaces side by side
                text = _SPACES.sub(" ", text)
            if block:
                text = text.lstrip()
            if len(element) == 0:
                if block:
                    text = text.rstrip()
            elif element[0].tag in BLOCK_TAGS:
                text = text.rstrip()
            element.text = text or None
        if block and len(element):
            last = element[-1]
            if last.tail:
                last.tail = last.tail.rstrip() or None
    tail = element.tail
    if tail:
        if "  " in tail:
            tail = _SPACES.sub(" ", tail)
        if block:
            tail = tail.lstrip()
        following = element.getnext()
        if following is None:
            parent = element.getparent()
            if parent is not None and parent.tag in BLOCK_TAGS:
                tail = tail.rstrip()
        elif following.tag in BLOCK_TAGS:
            tail = tail.rstrip()
        element.tail = tail or None
