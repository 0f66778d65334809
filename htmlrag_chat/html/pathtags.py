"""HTML as a model reads it: tags renamed to their block-path names (``<div2>``).

The generative pruner asks a model for the path of the most relevant block; it can only
answer in paths it has seen, so the HTML it reads must carry the same numbered names that
``blocks.numbered_tags`` gives the paths.
"""

from __future__ import annotations

from html import escape

from lxml import etree

from htmlrag_chat.html.blocks import Document, numbered_tags
from htmlrag_chat.html.dom import Element


def to_numbered_html(document: Document) -> str:
    """All pages of a document with numbered tag names, one page per line."""
    names: dict[Element, str] = {}
    for parent in document.root.iter():
        for child, name in zip(parent, numbered_tags(parent), strict=True):
            if name is not None:
                names[child] = name
    return "\n".join(_render(page, names) for page in document.root)


def _render(top: Element, names: dict[Element, str]) -> str:
    parts: list[str] = []
    for event, element in etree.iterwalk(top, events=("start", "end")):
        name = names.get(element)
        if name is None:  # comments and other non-elements: their tail is still text
            if event == "end" and element.tail and element is not top:
                parts.append(escape(element.tail, quote=False))
            continue
        if event == "start":
            attributes = "".join(
                f' {key}="{escape(value)}"' for key, value in element.attrib.items()
            )
            parts.append(f"<{name}{attributes}>")
            if element.text:
                parts.append(escape(element.text, quote=False))
        else:
            parts.append(f"</{name}>")
            if element.tail and element is not top:
                parts.append(escape(element.tail, quote=False))
    return "".join(parts)
