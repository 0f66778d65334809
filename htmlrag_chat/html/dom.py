"""Parsing and the few tree operations every HTML stage shares.

All trees are lxml ``etree`` elements from the HTML parser. Functions here never recurse in
Python: real pages nest thousands of levels deep (we parse with ``huge_tree`` so deep content
is kept rather than silently truncated at depth 255).
"""

from __future__ import annotations

import re
import threading

from lxml import etree

from htmlrag_chat.html.foreign import close_foreign
from htmlrag_chat.html.markup import cap_tags, drop_bad_references, flatten_deep

Element = etree._Element

# Elements that start a new line of text in a browser: text on either side of their
# boundaries belongs to different words, so visible text puts a space there.
BLOCK_TAGS = frozenset(
    """
    address article aside blockquote body caption dd details dialog div dl dt fieldset
    figcaption figure footer form h1 h2 h3 h4 h5 h6 head header hgroup hr html li main nav
    ol p pre section summary table tbody td tfoot th thead title tr ul root br
    """.split()
)

# Content that never reaches the reader's eyes, or only as pixels (cleaning removes it).
INVISIBLE_TAGS = frozenset(
    """
    script style template iframe frame frameset object embed applet canvas svg math audio
    video source track map area link meta base param input select textarea datalist
    """.split()
)

# Control characters XML cannot hold. lxml parses them but refuses them when a tree is
# edited, and none is visible text; ESC among them starts every terminal escape sequence.
# In UTF-8 these bytes never occur inside a multi-byte character, so deleting bytes is safe.
# Character references to them are removed before parsing too (``markup``).
_CONTROL_BYTES = bytes(range(0x00, 0x09)) + b"\x0b" + bytes(range(0x0E, 0x20))
_NONCHARACTERS = re.compile(b"\xef\xbf[\xbe\xbf]")  # U+FFFE, U+FFFF: also not XML

# libxml2 gives up on a document nested deeper than 2,048 elements and drops everything
# after that point. Browsers render such pages, so we parse them again with the tags past
# a depth flattened (``markup.flatten_deep``): the text survives, only nesting is lost. The
# second limit is for pages the first one does not bring under the parser's.
_FLATTEN_LIMITS = (512, 64)
_DEPTH_LIMIT = "ERR_RESOURCE_LIMIT"

_local = threading.local()


def _parser() -> etree.HTMLParser:
    """One parser per thread: lxml parsers must not be shared between threads."""
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = etree.HTMLParser(
            remove_comments=True,
            remove_pis=True,
            huge_tree=True,
            no_network=True,
            default_doctype=False,
            encoding="utf-8",
        )
        _local.parser = parser
    return parser


def parse(html: str | bytes) -> Element:
    """Parse HTML (text, or UTF-8 bytes) into an ``<html>`` element.

    Bytes must already be UTF-8 (``decode.decode_html``): the parser is told so, and an
    XML declaration or ``<meta charset>`` in the page must not make it decode them again.
    Empty input gives an empty document.
    """
    data = html.encode("utf-8", "replace") if isinstance(html, str) else html
    data = data.replace(b"\x0c", b" ").translate(None, _CONTROL_BYTES)
    if b"\xef\xbf" in data:
        data = _NONCHARACTERS.sub(b"", data)
    data = close_foreign(cap_tags(drop_bad_references(data)))
    root = _parse_bytes(data)
    for limit in _FLATTEN_LIMITS:
        if root is None or not _too_deep():
            break
        root = _parse_bytes(flatten_deep(data, limit, BLOCK_TAGS, INVISIBLE_TAGS))
    if root is None:
        root = etree.Element("html")
        etree.SubElement(root, "body")
    return root


def _too_deep() -> bool:
    """Whether the last parse stopped at libxml2's nesting limit."""
    return any(_DEPTH_LIMIT in entry.type_name for entry in _parser().error_log)


def _parse_bytes(data: bytes) -> Element | None:
    if not data.strip():
        return None
    try:
        return etree.fromstring(data, _parser())
    except etree.LxmlError:  # input so broken that even recovery finds no document
        return None


def is_block(element: Element) -> bool:
    """Whether a browser would render this element on lines of its own."""
    return element.tag in BLOCK_TAGS


def drop(element: Element) -> None:
    """Remove an element and its subtree but keep its tail text, which is its parent's."""
    parent = element.getparent()
    if parent is None:
        return
    if element.tail:
        put_text_before(element, element.tail)
    parent.remove(element)


def put_text_before(element: Element, text: str) -> None:
    """Append text to whatever precedes ``element``: its previous sibling's tail, or its
    parent's text. Used when ``element`` goes and text around it must stay, so it has a parent
    (both callers check)."""
    previous = element.getprevious()
    if previous is not None:
        previous.tail = join_text(previous.tail, text)
    else:
        parent = element.getparent()
        assert parent is not None, "text goes before an element that has a parent"
        parent.text = join_text(parent.text, text)


def join_text(left: str | None, right: str | None) -> str:
    """Concatenate two text runs without doubling the space between them."""
    left, right = left or "", right or ""
    if left[-1:].isspace() and right[:1].isspace():
        return left + right[1:]
    return left + right


def loose_text(element: Element) -> list[str]:
    """Text directly under an element: its own text and its children's tails."""
    pieces = [element.text] if element.text else []
    pieces.extend(child.tail for child in element if child.tail)
    return pieces


def clear_loose_text(element: Element) -> None:
    """Delete the text directly under an element, leaving its children intact."""
    element.text = None
    for child in element:
        child.tail = None
