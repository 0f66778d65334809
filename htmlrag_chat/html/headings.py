"""The heading each block sits under, so that a block can be judged with its context.

An answer paragraph often names none of the question's words: "He won it in 2011" sits
under "Career" under a page titled "Rory McIlroy". Scoring the paragraph alone misses it;
scoring it with its page title and nearest heading does not. The blocks themselves are left
as they are: the context is only read by scorers.
"""

from __future__ import annotations

import bisect

from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.html.text import normalize_space, visible_text

HEADING_TAGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_MAX_CHARS = 200  # a heading longer than this is content, not a label


def heading_context(tree: BlockTree) -> list[str]:
    """For each block, its page's title and the nearest heading before it on its page
    (either may be missing), as one line of text."""
    root = tree.document.root
    position = {element: index for index, element in enumerate(root.iter())}
    marks: list[int] = []
    texts: list[str] = []
    for element in root.iter(*HEADING_TAGS):
        text = normalize_space(visible_text(element))[:_MAX_CHARS]
        if text:
            marks.append(position[element])
            texts.append(text)
    page_start = [position[page] for page in root]
    context = []
    for block in tree.blocks:
        title = tree.document.pages[block.page].title
        before = bisect.bisect_left(marks, block.position) - 1
        heading = ""
        if before >= 0 and marks[before] > page_start[block.page]:
            heading = texts[before]
        context.append(" - ".join(part for part in (title, heading) if part and part != block.text))
    return context
