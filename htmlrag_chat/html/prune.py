"""Greedy block pruning to a token budget (HtmlRAG Algorithm 2), in time linear in the page.

Every block's tokens are counted once (``token_costs``); the tags of expanded elements are
charged while any block under them survives. Blocks are deleted lowest score first until the
estimate fits (the paper's algorithm), then the deleted blocks are offered back best first
and every one that still fits returns: one large block near the top no longer leaves half
the budget empty. A block scored ``DISCARD`` goes whatever room is left: a scorer that knows
a block is boilerplate says so, rather than letting it fill the budget's spare room. The
deletions are applied to a copy of the document and the structural compression runs again.
The estimate is an upper bound in practice (compression removes tags; BPE merges across
block boundaries), but BPE gives no guarantee, so the real output is counted once and, in
the rare case it is over, pruning continues from where it stopped. The output never exceeds
the budget and is always whole HTML: we delete blocks, we never truncate text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.html.blocks import BlockKind, BlockTree, Document, serialize
from htmlrag_chat.html.clean import compress
from htmlrag_chat.html.dom import clear_loose_text, drop, loose_text

_MAX_ROUNDS = 16
DISCARD = -math.inf  # a block's score when it must go even if the budget has room for it


@dataclass(frozen=True)
class TokenCosts:
    blocks: list[int]  # tokens of each block's HTML (ELEMENT) or loose text (TEXT)
    nodes: list[int]  # tokens of each expanded element's own open and close tags

    @property
    def total(self) -> int:
        """The document's tokens counted block by block, what pruning starts from.

        Within a few percent of counting the serialized document whole (usually above it,
        as BPE merges across tags), without tokenizing the document a second time.
        """
        return sum(self.blocks) + sum(self.nodes)


@dataclass(frozen=True)
class PruneResult:
    document: Document  # the pruned copy; the input tree is left as it was
    kept: list[int]  # indices of surviving blocks, in document order
    blocks: int  # blocks in the tree before pruning
    tokens_before: int  # block-wise count of the input (``TokenCosts.total``)
    tokens_after: int  # exact count of the output
    rounds: int  # times the output was counted (1 unless the estimate fell short)


def token_costs(tree: BlockTree, counter: TokenCounter) -> TokenCosts:
    """Token costs of a tree's blocks under ``counter``, computed once per tree."""
    cached = tree.cost_cache.get(counter.name)
    if isinstance(cached, TokenCosts):
        return cached
    texts = [
        serialize(block.element)
        if block.kind is BlockKind.ELEMENT
        else " ".join(loose_text(block.element))
        for block in tree.blocks
    ]
    # Expanded nodes are elements, whose tags the parser made text (lxml types a tag as any
    # name a caller may set: bytes, QName).
    tags = sorted({str(node.element.tag) for node in tree.nodes[1:]})
    tag_costs = dict(
        zip(tags, counter.count_many([f"<{tag}></{tag}>" for tag in tags]), strict=True)
    )
    # Pages are joined by a newline: charge it to each page's <html>.
    nodes = [0] + [tag_costs[str(node.element.tag)] + (node.parent == 0) for node in tree.nodes[1:]]
    costs = TokenCosts(blocks=counter.count_many(texts), nodes=nodes)
    tree.cost_cache[counter.name] = costs
    return costs


def deletion_order(scores: Sequence[float]) -> list[int]:
    """Blocks in the order they are deleted: lowest score first; on ties, the later block."""
    return sorted(range(len(scores)), key=lambda index: (scores[index], -index))


def prune(
    tree: BlockTree, scores: Sequence[float], budget: int, counter: TokenCounter
) -> PruneResult:
    """Keep the highest-scoring blocks of ``tree`` whose HTML fits in ``budget`` tokens."""
    if len(scores) != len(tree.blocks):
        raise ValueError(f"{len(scores)} scores for {len(tree.blocks)} blocks")
    costs = token_costs(tree, counter)
    order = deletion_order(scores)
    discarded = sum(1 for score in scores if score == DISCARD)  # first in ``order``
    target = budget
    for rounds in range(1, _MAX_ROUNDS + 1):
        deleted = select_deletions(tree, costs, order, target, discarded)
        document = _apply(tree, deleted)
        tokens = counter.count(document.to_html())
        if tokens <= budget:
            kept = sorted(set(range(len(tree.blocks))) - set(deleted))
            return PruneResult(document, kept, len(tree.blocks), costs.total, tokens, rounds)
        # The estimate was short by (tokens - target): ask for that much more, and ever more
        # so that the loop ends even when single deletions barely move the count.
        target -= (tokens - budget) * rounds
    return _empty_result(tree, costs)


def select_deletions(
    tree: BlockTree, costs: TokenCosts, order: Sequence[int], target: int, discarded: int = 0
) -> list[int]:
    """Blocks to delete so the estimate fits ``target``: the first ``discarded`` of ``order``,
    then the lowest-scoring until it fits, less those that fit back in afterwards (best
    first; never a discarded one)."""
    estimate = TokenEstimate(tree, costs)
    deleted = 0
    while deleted < len(order) and (deleted < discarded or estimate.total > target):
        estimate.delete(order[deleted])
        deleted += 1
    for index in reversed(order[discarded:deleted]):
        if estimate.total + estimate.restore_cost(index) <= target:
            estimate.restore(index)
    return [index for index in order[:deleted] if not estimate.alive(index)]


class TokenEstimate:
    """Running token estimate of the document as blocks are deleted and restored.

    An expanded node's tags cost tokens while it holds anything alive: a live block directly
    under it or a live child node. When its last item dies, it dies too and tells its parent;
    restoring a block revives its dead ancestors.
    """

    def __init__(self, tree: BlockTree, costs: TokenCosts) -> None:
        self._tree = tree
        self._costs = costs
        self._live_blocks = [True] * len(tree.blocks)
        self._live_items = [0] * len(tree.nodes)
        for block in tree.blocks:
            self._live_items[block.owner] += 1
        for node in tree.nodes[1:]:
            self._live_items[node.parent] += 1
        self.total = costs.total

    def alive(self, block_index: int) -> bool:
        return self._live_blocks[block_index]

    def delete(self, block_index: int) -> None:
        self._live_blocks[block_index] = False
        self.total -= self._costs.blocks[block_index]
        node = self._tree.blocks[block_index].owner
        while node >= 0:
            self._live_items[node] -= 1
            if self._live_items[node]:
                return
            self.total -= self._costs.nodes[node]
            node = self._tree.nodes[node].parent

    def restore_cost(self, block_index: int) -> int:
        """Tokens that restoring a deleted block would add: it and its dead ancestors' tags."""
        cost = self._costs.blocks[block_index]
        node = self._tree.blocks[block_index].owner
        while node >= 0 and not self._live_items[node]:
            cost += self._costs.nodes[node]
            node = self._tree.nodes[node].parent
        return cost

    def restore(self, block_index: int) -> None:
        self._live_blocks[block_index] = True
        self.total += self._costs.blocks[block_index]
        node = self._tree.blocks[block_index].owner
        while node >= 0:
            self._live_items[node] += 1
            if self._live_items[node] > 1:
                return
            self.total += self._costs.nodes[node]
            node = self._tree.nodes[node].parent


def _apply(tree: BlockTree, deleted: Sequence[int]) -> Document:
    """A copy of the tree's document without the deleted blocks, compressed again."""
    document = tree.document.copy()
    elements = list(document.root.iter())
    pages = list(document.root)
    for index in deleted:
        block = tree.blocks[index]
        element = elements[block.position]
        if block.kind is BlockKind.TEXT:
            clear_loose_text(element)
        else:
            drop(element)
    compress(document.root)
    survivors = [page.getparent() is not None for page in pages]
    document.pages = [page for page, alive in zip(document.pages, survivors, strict=True) if alive]
    return document


def _empty_result(tree: BlockTree, costs: TokenCosts) -> PruneResult:
    document = tree.document.copy()
    for page in list(document.root):
        document.root.remove(page)
    document.pages = []
    return PruneResult(document, [], len(tree.blocks), costs.total, 0, _MAX_ROUNDS)
