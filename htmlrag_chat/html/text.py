"""Visible text and word counts, the measures that blocks and retention checks share."""

from __future__ import annotations

import re

from lxml import etree

from htmlrag_chat.html.dom import BLOCK_TAGS, Element

# Hiragana, Katakana, CJK ideographs (with extension A and compatibility), Hangul syllables:
# scripts written without spaces, where each character counts as one word.
CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_SPACE = re.compile(r"\s+")

# Marks block boundaries while collecting text; the parser strips control characters from
# pages, so it cannot occur in their text.
_BLOCK_MARK = "\x00"
# Content that is never rendered, even on a raw page.
NEVER_VISIBLE = frozenset({"script", "style", "template"})


def count_words(text: str | None) -> int:
    """Whitespace-separated words, with every CJK character counted as one word."""
    if not text:
        return 0
    cjk = len(CJK.findall(text))
    if cjk:
        text = CJK.sub(" ", text)
    return cjk + len(text.split())


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace to one space and strip the ends."""
    return _SPACE.sub(" ", text).strip()


def visible_text(root: Element, skip: frozenset[str] = NEVER_VISIBLE, lines: bool = False) -> str:
    """The text a reader sees, with a space wherever a block element begins or ends (with
    ``lines``, a line break: one line per block, so sentences never run across blocks).

    Inline boundaries add nothing, so ``foo<b>bar</b>`` reads ``foobar`` as in a browser.
    """
    boundary = _BLOCK_MARK if lines else " "
    parts: list[str] = []
    skipping = 0
    for event, element in etree.iterwalk(root, events=("start", "end")):
        tag = element.tag
        if not isinstance(tag, str):
            if event == "end" and not skipping and element.tail:
                parts.append(element.tail)
            continue
        if event == "start":
            if skipping or tag in skip:
                skipping += 1
                continue
            if tag in BLOCK_TAGS:
                parts.append(boundary)
            if element.text:
                parts.append(element.text)
        else:
            if skipping:
                skipping -= 1
                if skipping:
                    continue
            elif tag in BLOCK_TAGS:
                parts.append(boundary)
            if element.tail and element is not root:
                parts.append(element.tail)
    if not lines:
        return normalize_space("".join(parts))
    blocks = (normalize_space(block) for block in "".join(parts).split(_BLOCK_MARK))
    return "\n".join(block for block in blocks if block)
