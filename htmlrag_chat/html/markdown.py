"""Pruned HTML as Markdown, for agents that read Markdown better than tags.

HtmlRAG keeps HTML because headings, lists and tables carry meaning; Markdown keeps the
same three (``#`` headings, ``-`` items, ``|`` rows) at fewer tokens, and drops the rest of
the markup. Text is written as it is, never escaped: the result is read by a model, not
rendered, and what keeps page text from passing for instructions is the delimiting around
each source (``mcp/untrusted.py``), not the markup.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from htmlrag_chat.html.dom import Element, parse
from htmlrag_chat.html.text import normalize_space

_HEADINGS = {f"h{level}": "#" * level for level in range(1, 7)}
_BLOCKS = frozenset(
    "p div section article main header footer aside nav blockquote figure figcaption"
    " dl dt dd address details summary form fieldset body html".split()
)
_SKIPPED = frozenset({"head", "title", "script", "style", "template"})  # the title is a field
_BLANK_LINES = re.compile(r"\n{3,}")


def html_to_markdown(html: str) -> str:
    """Markdown for a fragment or page of (pruned) HTML; empty for no visible text."""
    if not html.strip():
        return ""
    lines: list[str] = []
    _block(parse(html), lines)
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _block(element: Element, lines: list[str], depth: int = 0) -> None:
    """Write ``element`` as block lines: runs of inline content become paragraphs."""
    tag = element.tag if isinstance(element.tag, str) else ""
    if tag in _SKIPPED:
        return
    if tag in _HEADINGS:
        lines += ["", f"{_HEADINGS[tag]} {_inline(element)}", ""]
    elif tag in ("ul", "ol"):
        _list(list(element), lines, depth, ordered=tag == "ol")
    elif tag == "li":  # an item without its list: a block that pruning kept on its own
        _list([element], lines, depth, ordered=False)
    elif tag == "table":
        _table(element.iter("tr"), lines)
    elif tag == "tr":  # likewise a row without its table: no header line of its own
        _table([element], lines, header=False)
    elif tag == "pre":
        lines += ["", "```", "".join(element.itertext()).strip("\n"), "```", ""]
    elif tag in _BLOCKS:
        _mixed(element, lines, depth)
    else:
        lines.append(_inline(element))


def _mixed(element: Element, lines: list[str], depth: int) -> None:
    """Inline runs as paragraphs, block children in their own lines."""
    run: list[str] = [element.text or ""]
    for child in element:
        child_tag = child.tag if isinstance(child.tag, str) else ""
        if child_tag in _SKIPPED:
            run.append(child.tail or "")
        elif _is_block(child_tag):
            _flush(run, lines)
            _block(child, lines, depth)
            run = [child.tail or ""]
        else:
            run += [_inline(child), child.tail or ""]
    _flush(run, lines)


def _is_block(tag: str) -> bool:
    return tag in _BLOCKS or tag in _HEADINGS or tag in ("ul", "ol", "table", "pre", "li", "tr")


def _flush(run: list[str], lines: list[str]) -> None:
    text = normalize_space("".join(run))
    if text:
        lines += ["", text, ""]


def _list(items: list[Element], lines: list[str], depth: int, ordered: bool) -> None:
    lines.append("")
    number = 0
    for item in items:
        if item.tag != "li":
            _block(item, lines, depth)
            continue
        number += 1
        marker = f"{number}." if ordered else "-"
        nested: list[str] = []
        _mixed(item, nested, depth + 1)
        body = [line for line in nested if line.strip()]
        indent = "  " * depth
        lines.append(f"{indent}{marker} {body[0].strip() if body else ''}")
        # Nested items come indented already; a further paragraph joins the item's indent.
        lines += [line if line.startswith(" ") else f"{indent}  {line}" for line in body[1:]]
    lines.append("")


def _table(rows_in: Iterable[Element], lines: list[str], header: bool = True) -> None:
    """Rows as Markdown table rows, the first one as the header (``header``)."""
    rows = [
        [_inline(cell).replace("|", "\\|") for cell in row if cell.tag in ("td", "th")]
        for row in rows_in
    ]
    rows = [row for row in rows if row]
    if not rows:
        return
    width = max(map(len, rows))
    lines.append("")
    for index, row in enumerate(rows):
        lines.append("| " + " | ".join(row + [""] * (width - len(row))) + " |")
        if index == 0 and header:
            lines.append("|" + " --- |" * width)
    lines.append("")


def _inline(element: Element) -> str:
    """An element's text on one line; a link keeps its address, code its backticks."""
    tag = element.tag if isinstance(element.tag, str) else ""
    text = normalize_space(" ".join(element.itertext()))
    if not text:
        return ""
    if tag == "a" and element.get("href", "").startswith(("http://", "https://")):
        return f"[{text}]({element.get('href')})"
    if tag == "code":
        return f"`{text}`"
    if tag in ("b", "strong"):
        return f"**{text}**"
    return text
