"""Documents of several pages and their block trees (HtmlRAG Algorithm 1).

A ``Document`` holds cleaned pages under one synthetic ``<root>``, one ``<html>`` subtree per
page, so every block knows which page (source) it came from. A ``BlockTree`` partitions a
document into blocks: breadth-first, an element with at most ``max_words`` words is one block;
a larger one is expanded into its children, and its loose text (the text directly under it)
becomes a block of its own, whatever its length, so that every visible word can be pruned.

Blocks are addressed by paths of tags from the root in which same-name siblings are numbered
(``<html1><body><div2><p>``). ``numbered_tags`` is the one place that numbering is decided;
``render.to_numbered_html`` uses it too, so the HTML a model reads and the paths it is asked
to produce always agree.
"""

from __future__ import annotations

import copy
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

from lxml import etree

from htmlrag_chat.html.dom import Element, loose_text
from htmlrag_chat.html.text import count_words, normalize_space, visible_text

DEFAULT_MAX_WORDS = 256


@dataclass(frozen=True)
class Page:
    """Where a page came from (a file name or URL), its title and the publication day its
    metadata declares (``YYYY-MM-DD``, or "")."""

    source: str
    title: str = ""
    date: str = ""


@dataclass
class Document:
    """Cleaned pages under one root; ``root[i]`` is the ``<html>`` of ``pages[i]``."""

    root: Element
    pages: list[Page]

    @classmethod
    def from_pages(cls, pages: Sequence[tuple[Page, Element]]) -> Document:
        """Gather already cleaned page trees (their ``<html>`` elements) under one root."""
        root = etree.Element("root")
        for _, html in pages:
            root.append(html)
        return cls(root, [page for page, _ in pages])

    def copy(self) -> Document:
        return Document(copy.deepcopy(self.root), list(self.pages))

    def page_html(self, index: int) -> str:
        return serialize(self.root[index])

    def to_html(self) -> str:
        """All pages as HTML, one ``<html>`` element per page, separated by newlines."""
        return "\n".join(serialize(page) for page in self.root)


def serialize(element: Element) -> str:
    """An element as HTML text, without its tail."""
    return etree.tostring(element, encoding="unicode", method="html", with_tail=False)


def page_title(html: Element) -> str:
    title = html.find(".//title")
    return normalize_space(title.text or "") if title is not None else ""


class BlockKind(Enum):
    ELEMENT = "element"  # the whole element with its subtree
    TEXT = "text"  # only the loose text directly under an expanded element


@dataclass(frozen=True)
class Block:
    """One prunable unit of a document."""

    index: int
    kind: BlockKind
    element: Element
    path: tuple[str, ...]
    page: int
    text: str
    words: int
    position: int  # the element's index in document order (``root.iter()``)
    owner: int  # the expanded node the block sits directly under (for ELEMENT: its parent)


@dataclass(frozen=True)
class Node:
    """An element that was expanded because it held more than ``max_words`` words."""

    element: Element
    parent: int  # index into BlockTree.nodes, -1 for the root
    path: tuple[str, ...]
    page: int


@dataclass
class BlockTree:
    document: Document
    max_words: int
    blocks: list[Block]
    nodes: list[Node]
    # Per-tokenizer token costs, filled by ``prune.token_costs`` so budgets at several sizes
    # (and both pruning stages) tokenize each block once.
    cost_cache: dict[str, object] = field(default_factory=dict, repr=False)


def render_path(path: Sequence[str]) -> str:
    """A block path as shown to models and users: ``<html1><body><div2><p>``."""
    return "".join(f"<{tag}>" for tag in path)


def numbered_tags(parent: Element) -> list[str | None]:
    """Tag names of ``parent``'s children, numbered from 1 where a name repeats.

    Non-element children (comments) get None: they are never blocks.
    """
    tags = [child.tag if isinstance(child.tag, str) else None for child in parent]
    repeats = Counter(tag for tag in tags if tag is not None)
    seen: Counter[str] = Counter()
    names: list[str | None] = []
    for tag in tags:
        if tag is None:
            names.append(None)
        elif repeats[tag] > 1:
            seen[tag] += 1
            names.append(f"{tag}{seen[tag]}")
        else:
            names.append(tag)
    return names


def build_block_tree(document: Document, max_words: int = DEFAULT_MAX_WORDS) -> BlockTree:
    """Partition a document into blocks of at most ``max_words`` words (loose text aside)."""
    root = document.root
    words = _word_counts(root)
    position = {element: index for index, element in enumerate(root.iter())}
    nodes = [Node(root, -1, (), -1)]
    blocks: list[Block] = []
    queue = deque([0])
    while queue:
        node_index = queue.popleft()
        node = nodes[node_index]
        element = node.element
        if node_index:
            text = normalize_space(" ".join(loose_text(element)))
            if text:
                blocks.append(
                    Block(
                        index=0,
                        kind=BlockKind.TEXT,
                        element=element,
                        path=node.path,
                        page=node.page,
                        text=text,
                        words=count_words(text),
                        position=position[element],
                        owner=node_index,
                    )
                )
        for page_or_child, (child, name) in enumerate(
            zip(element, numbered_tags(element), strict=True)
        ):
            if name is None:
                continue
            page = page_or_child if node_index == 0 else node.page
            path = (*node.path, name)
            if words[child] <= max_words or len(child) == 0:
                blocks.append(
                    Block(
                        index=0,
                        kind=BlockKind.ELEMENT,
                        element=child,
                        path=path,
                        page=page,
                        text=visible_text(child),
                        words=words[child],
                        position=position[child],
                        owner=node_index,
                    )
                )
            else:
                nodes.append(Node(child, node_index, path, page))
                queue.append(len(nodes) - 1)
    # Document order, a node's loose text before its children: stable tie-breaks and output.
    blocks.sort(key=lambda block: (block.position, block.kind is BlockKind.ELEMENT))
    blocks = [replace(block, index=index) for index, block in enumerate(blocks)]
    return BlockTree(document, max_words, blocks, nodes)


# Table rows, cells and list items cost tokens for their tags that their words do not show
# (a 126-word price table is several hundred tokens); counted as two words each, a big table
# or list is cut into rows and items that compete on their own (docs/method.md).
_TAG_WORDS = {"tr": 2, "td": 2, "th": 2, "li": 2}


def _word_counts(root: Element) -> dict[Element, int]:
    """Words under every element (its text, its children and their tails, and ``_TAG_WORDS``
    for its rows, cells and items), bottom-up once."""
    counts: dict[Element, int] = {}
    for element in reversed(list(root.iter())):
        total = count_words(element.text) if isinstance(element.tag, str) else 0
        total += _TAG_WORDS.get(element.tag, 0) if isinstance(element.tag, str) else 0
        for child in element:
            total += counts.get(child, 0) + count_words(child.tail)
        counts[element] = total
    return counts
