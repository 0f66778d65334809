"""The block paths of stage 2 as a token trie, laid out for one forward pass.

Every block path (its tokens, then the end-of-turn token) is a path from the root of a
prefix tree; paths share their common prefixes. The model must read a trie node's token only
when a branching node (two or more children) is at or below it: the logits at a branching
node score its children, and a node with one child passes its probability on unchanged.
``TreeLayout`` lists those nodes depth-first (preorder), so that a node's subtree is the run
of rows after it up to ``ends[row]``, and its ancestors are the rows before it whose run
holds it: the tree attention mask of ``scoring.generative`` in two comparisons per cell.

Pure Python: no torch, and no recursion (a deeply nested page has paths of thousands of
tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class TrieNode:
    token: int
    children: dict[int, TrieNode] = field(default_factory=dict)
    blocks: list[int] = field(default_factory=list)  # blocks whose path ends here


@dataclass
class TokenTrie:
    root: TrieNode
    nodes: int  # nodes below the root (tokens of all paths, shared prefixes once)

    @classmethod
    def build(cls, paths: Sequence[Sequence[int]]) -> TokenTrie:
        root, nodes = TrieNode(-1), 0
        for block, tokens in enumerate(paths):
            node = root
            for token in tokens:
                child = node.children.get(token)
                if child is None:
                    child = node.children[token] = TrieNode(token)
                    nodes += 1
                node = child
            node.blocks.append(block)
        return cls(root, nodes)

    def preorder(self) -> list[tuple[TrieNode, TrieNode | None]]:
        """Every node with its parent (None for the root), parents before children."""
        order: list[tuple[TrieNode, TrieNode | None]] = []
        stack: list[tuple[TrieNode, TrieNode | None]] = [(self.root, None)]
        while stack:
            node, parent = stack.pop()
            order.append((node, parent))
            stack.extend((child, node) for child in reversed(node.children.values()))
        return order


@dataclass
class TreeLayout:
    """The trie nodes the model reads, in preorder, and where their children's logits are.

    ``depths`` count from 1 (a child of the root), so a row's position after a prompt of
    ``P`` tokens is ``P + depth - 1``. ``branching`` pairs each branching node with its row,
    -1 for the root (whose children are scored by the prompt's last position)."""

    tokens: list[int] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    ends: list[int] = field(default_factory=list)  # a row's subtree: rows [row, ends[row])
    branching: list[tuple[int, TrieNode]] = field(default_factory=list)

    @classmethod
    def of(cls, trie: TokenTrie) -> TreeLayout:
        order = trie.preorder()
        leads_to_branch: dict[int, bool] = {}  # by id(node)
        for node, _ in reversed(order):  # children before their parents
            leads_to_branch[id(node)] = len(node.children) > 1 or any(
                leads_to_branch[id(child)] for child in node.children.values()
            )
        layout, depth_of = cls(), {id(trie.root): 0}
        for node, parent in order:
            if parent is None:
                if len(node.children) > 1:
                    layout.branching.append((-1, node))
                continue
            if not leads_to_branch[id(node)]:
                continue
            depth_of[id(node)] = depth = depth_of[id(parent)] + 1
            if len(node.children) > 1:
                layout.branching.append((len(layout.tokens), node))
            layout.tokens.append(node.token)
            layout.depths.append(depth)
        layout.ends = _subtree_ends(layout.depths)
        return layout


def _subtree_ends(depths: Sequence[int]) -> list[int]:
    """For each preorder row, the first row after its subtree (the next one no deeper)."""
    ends = [len(depths)] * len(depths)
    open_rows: list[int] = []
    for row, depth in enumerate(depths):
        while open_rows and depths[open_rows[-1]] >= depth:
            ends[open_rows.pop()] = row
        open_rows.append(row)
    return ends
