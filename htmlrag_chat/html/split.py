"""Long runs of text cut into pieces, so that one long paragraph is pruned in parts.

A block is an element, or an expanded element's loose text, and an element with no
children is one block however many words it holds. A page whose text is one long run (a
720-word ``<p>``, a plain-text page, a ``<pre>`` dump, CJK text without spaces) was therefore
a single block, and any budget smaller than that block deleted the whole page. Before blocks
are built, every run of more than ``max_words`` words is cut at sentence or line ends into
pieces of at most ``max_words`` words, each wrapped in a ``<span>``: the visible text stays
the same to the character (spaces and line breaks included) and every piece can be kept or
dropped on its own. Compression unwraps a lone span again after pruning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from lxml import etree

from htmlrag_chat.html.blocks import Document
from htmlrag_chat.html.dom import Element
from htmlrag_chat.html.text import CJK, count_words

# Where a piece may end: after a sentence's closing punctuation and the space behind it, or
# after a line break. CJK sentence ends need no space.
_SENTENCE_END = re.compile(r"[.!?;:][\"'\u201d\u2019)\]]*\s+|[\u3002\uff01\uff1f\uff1b]\s*|\n\s*")
# A word for the hard cut of a sentence longer than a piece: a CJK character, or a run of
# other non-space characters, with the spaces behind it.
_WORD = re.compile(rf"(?:{CJK.pattern}|[^\s{CJK.pattern[1:-1]}]+)\s*")


def split_long_text(document: Document, max_words: int) -> Document:
    """``document`` itself when no run of text exceeds ``max_words`` words, else a copy in
    which every such run is cut into ``<span>`` pieces (the input is never changed)."""
    if not any(_long_runs(document.root, max_words)):
        return document
    document = document.copy()
    for element, child in list(_long_runs(document.root, max_words)):
        if child is None:
            text, element.text = element.text or "", None
            at = 0
        else:
            text, child.tail = child.tail or "", None
            at = element.index(child) + 1
        previous: Element | None = None
        for piece in pieces(text, max_words):
            span = etree.Element("span")
            span.text = piece
            # Each after the one before: insert() at an index walks the children up to it,
            # which made a 5 MiB run's 27,000 pieces quadratic (5 of its 14 s).
            if previous is None:
                element.insert(at, span)
            else:
                previous.addnext(span)
            previous = span
    return document


def _long_runs(root: Element, max_words: int) -> Iterator[tuple[Element, Element | None]]:
    """Each text run longer than ``max_words``: (element, None) for an element's own text,
    (parent, child) for the tail after ``child``."""
    for element in root.iter():
        if isinstance(element.tag, str) and count_words(element.text) > max_words:
            yield element, None
        for child in element:
            if count_words(child.tail) > max_words:
                yield element, child


def pieces(text: str, max_words: int) -> list[str]:
    """``text`` in consecutive pieces of at most ``max_words`` words that join back to it:
    whole sentences where they fit, a sentence longer than a piece cut between words."""
    result: list[str] = []
    current, words = "", 0
    for sentence in _sentences(text):
        size = count_words(sentence)
        if size > max_words:
            if current:
                result.append(current)
            *whole, current = _cut(sentence, max_words)
            result.extend(whole)
            words = count_words(current)
            continue
        if current and words + size > max_words:
            result.append(current)
            current, words = "", 0
        current += sentence
        words += size
    if current:
        result.append(current)
    return result


def _sentences(text: str) -> Iterator[str]:
    start = 0
    for match in _SENTENCE_END.finditer(text):
        yield text[start : match.end()]
        start = match.end()
    if start < len(text):
        yield text[start:]


def _cut(sentence: str, max_words: int) -> list[str]:
    """A sentence in pieces of exactly ``max_words`` words, the last one shorter; text the
    word pattern does not match (leading spaces) stays with its neighbour."""
    cuts: list[str] = []
    start = end = words = 0
    for match in _WORD.finditer(sentence):
        words += 1
        end = match.end()
        if words == max_words:
            cuts.append(sentence[start:end])
            start, words = end, 0
    if start < len(sentence):
        cuts.append(sentence[start:])
    return cuts or [sentence]
