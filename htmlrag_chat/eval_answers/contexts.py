"""A method's context as the reader gets it: numbered sources, one per page kept, in order.

``ask`` numbers the pages left after pruning (``agent.answer.numbered_sources``), each with
its title and address; the methods compared here are given the same shape, so that only
their content differs: an HTML method's pages are rendered as the run asks (HTML, Markdown
or text, the budget counted in that rendering), a text method's kept text (trafilatura's,
or the chosen chunks of a page) is its page's source as it is. A page is named by its file
relative to the pages' folder, which is all a dataset knows of it.
"""

from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.sources import Source
from htmlrag_chat.eval.methods import Context
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page


@dataclass(frozen=True)
class PageInfo:
    """What the reader is told of a page besides its content."""

    url: str
    title: str
    date: str


def page_infos(pages: Sequence[PageInput], folder: Path) -> list[PageInfo]:
    """Each page's name (its file relative to ``folder``), title and declared day."""
    infos = []
    for page in pages:
        try:
            cleaned, _ = clean_page(page)
            title, date = cleaned.title, cleaned.date
        except InputError:  # not a page: no method keeps anything of it either
            title, date = "", ""
        infos.append(PageInfo(os.path.relpath(page.source, folder), title, date))
    return infos


def numbered(
    context: Context, infos: Sequence[PageInfo], html_method: bool, rendering: str
) -> list[Source]:
    """The context's pieces with text in them, numbered from 1 in reading order; an HTML
    method's in ``rendering``, a text method's as text."""
    sources: list[Source] = []
    for piece in context.pieces:
        info = infos[piece.page]
        if html_method:
            text = visible_text(parse(piece.content), lines=True) if piece.content.strip() else ""
            markup, kind = piece.content, rendering
        else:
            text = piece.content.strip()
            markup, kind = _paragraphs(text), "text"
        if text:
            sources.append(
                Source(len(sources) + 1, info.url, info.title, markup, text, info.date, kind)
            )
    return sources


def _paragraphs(text: str) -> str:
    """Kept text as HTML that renders back to it as text: one paragraph per line."""
    return "".join(f"<p>{html.escape(line)}</p>" for line in text.splitlines() if line.strip())
