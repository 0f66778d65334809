"""What the reader receives of pruned HTML: the HTML itself, Markdown, or plain text.

HtmlRAG hands the reader HTML, since headings, lists and tables carry meaning. Markdown keeps
those three at fewer tokens (tags were about 18% of the pruned HTML on the dev set) and text
keeps only the words, one line per block. Which one reads best is a measured choice
(``eval answers``, docs/evaluation.md), so the reader's prompt, the MCP tools and the
evaluation all render here, and a budget counts what the reader gets: pruning with a
``RenderedCounter`` fits more content in the same budget when the rendering is leaner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.markdown import html_to_markdown
from htmlrag_chat.html.text import NEVER_VISIBLE, visible_text

# The page's title is a field of its source header, as in Markdown, not a line of its text.
_NOT_TEXT = NEVER_VISIBLE | {"title"}


def _text(html: str) -> str:
    return visible_text(parse(html), _NOT_TEXT, lines=True) if html.strip() else ""


# Pages are serialized one ``<html>`` element after another; in a wrapper element the parser
# keeps every page's content (``eval.metrics.html_text`` does the same), not the first only.
RENDERERS: dict[str, Callable[[str], str]] = {
    "html": lambda html: html,
    "markdown": lambda html: html_to_markdown(f"<div>{html}</div>") if html.strip() else "",
    "text": lambda html: _text(f"<div>{html}</div>"),
}
RENDERINGS = tuple(RENDERERS)


def render(html: str, rendering: str) -> str:
    """``html`` (a fragment, a page, or pages one after another) as ``rendering`` writes
    it; ValueError for a rendering that does not exist."""
    try:
        renderer = RENDERERS[rendering]
    except KeyError:
        raise ValueError(f"no rendering {rendering!r} (known: {', '.join(RENDERINGS)})") from None
    return renderer(html)


@dataclass(frozen=True)
class RenderedCounter:
    """A token counter that counts HTML as the reader will receive it. Pruning counts every
    block's HTML and each tag pair once, then the whole output: rendered, a tag pair costs
    nothing and a block what its Markdown or text costs, and the final count is exact."""

    counter: TokenCounter
    rendering: str

    @property
    def name(self) -> str:  # token costs are cached per counter name
        return f"{self.counter.name}+{self.rendering}"

    @property
    def exact(self) -> bool:
        return self.counter.exact

    def count(self, text: str) -> int:
        return self.counter.count(render(text, self.rendering))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return self.counter.count_many([render(text, self.rendering) for text in texts])


def rendered_counter(counter: TokenCounter, rendering: str) -> TokenCounter:
    """``counter`` counting what ``rendering`` makes of HTML (itself for HTML)."""
    render("", rendering)  # an unknown rendering fails here, not at the first count
    return counter if rendering == "html" else RenderedCounter(counter, rendering)
