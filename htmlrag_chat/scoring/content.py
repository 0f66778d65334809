"""Which blocks are a page's main content, by trafilatura's reading of the page.

Navigation, "related articles", teasers and footers repeat a page's words ("Docker" in every
menu of a Docker page), so a query-based score keeps them as readily as the article.
trafilatura, a main-text extractor tuned on thousands of real pages (and the ``plain``
baseline of ``eval``), tells the article from the rest; a block counts as main content when
most of its term triples are in the extracted text of its page. This is query-independent
and costs 10-20 ms a page. The fused scorer gives main content a rank bonus and discards
the rest unless the question's own evidence vouches for it: a recipe card that trafilatura
leaves out still wins on BM25 and embedding evidence (``fused.boilerplate``).
"""

from __future__ import annotations

from htmlrag_chat.html.blocks import BlockTree, serialize
from htmlrag_chat.lexical import terms

SHINGLE_WORDS = 3
MIN_SHARE = 0.5  # of a block's term triples found in the main text


def main_content(tree: BlockTree) -> list[bool]:
    """Per block: whether it belongs to the main text of its page."""
    import trafilatura

    pages: dict[int, set[str]] = {}
    flags = []
    for block in tree.blocks:
        if block.page not in pages:
            html = serialize(tree.document.root[block.page])
            text = trafilatura.extract(html, include_tables=True, include_comments=False)
            pages[block.page] = set(shingles(text or ""))
        own = shingles(block.text)
        found = sum(1 for shingle in own if shingle in pages[block.page])
        flags.append(bool(own) and found >= MIN_SHARE * len(own))
    return flags


def shingles(text: str) -> list[str]:
    """The term triples of a text (the whole text when it is shorter). Terms are BM25's:
    casefolded words, and CJK characters one by one, since a page without spaces would
    otherwise be one "word" per paragraph that no piece of it (``html.split``) matches."""
    words = terms(text)
    if len(words) < SHINGLE_WORDS:
        return [" ".join(words)] if words else []
    return [" ".join(words[i : i + SHINGLE_WORDS]) for i in range(len(words) - SHINGLE_WORDS + 1)]
