"""How much a block looks like a page's main content, from its structure alone.

Navigation, footers, sidebars and menus repeat a page's title words ("Docker" in every menu
of a Docker page), so a query-based score keeps them as readily as the article. Two marks of
boilerplate survive cleaning: the sectioning tags pages wrap it in (``nav``, ``footer``,
``aside``, ``header``, ``form``), and text cut into many short pieces (menus, link lists,
tag clouds), where an article has long runs of words. The prior is query-independent; the
fused scorer ranks blocks by it as a third opinion beside BM25 and the embedding.
"""

from __future__ import annotations

import math

from htmlrag_chat.html.blocks import BlockKind, BlockTree
from htmlrag_chat.html.dom import Element, loose_text

BOILERPLATE_TAGS = frozenset({"nav", "footer", "aside", "header", "form"})
_BOILERPLATE_PENALTY = 2.0  # in log words per run: a footer paragraph ranks as a short phrase


def _runs(element: Element) -> int:
    """Text runs under an element, a table row counting as one: a row of short cells is one
    record of data, where a menu is many separate short items."""
    if element.tag in ("tr", "td", "th"):
        return 1
    runs = len(element.xpath(".//text()[normalize-space()][not(ancestor::tr)]"))
    return runs + int(element.xpath("count(.//tr[normalize-space()])"))


def content_prior(tree: BlockTree) -> list[float]:
    """Per block: log of words per text run, less a penalty inside a boilerplate section."""
    scores = []
    for block in tree.blocks:
        element = block.element
        if block.kind is BlockKind.TEXT:
            runs = sum(1 for text in loose_text(element) if text.strip())
        else:
            runs = _runs(element)
        density = block.words / max(runs, 1)
        tags = {element.tag, *(ancestor.tag for ancestor in element.iterancestors())}
        penalty = _BOILERPLATE_PENALTY if tags & BOILERPLATE_TAGS else 0.0
        scores.append(math.log1p(density) - penalty)
    return scores
