"""Stage 2 of HtmlRAG pruning: how likely a small LM is to answer with each block's path.

The model reads the document (tags numbered as block paths), the question and an instruction
to name the path of the most relevant piece (``prompts/pruner.md``, paper Figure 4). A block's
score is the log-probability of generating its path followed by the end-of-turn token.

The block paths are tokenized and merged into a prefix tree (``scoring.token_tree``).
Probabilities are renormalized over the paths that exist: a node with one child passes it
probability 1, and at a node with K children the softmax of the K children's logits at that
node gives all K siblings their probabilities at once (the reference reads position 0, so its
scores ignore the question and the page).

All of it costs two forward passes: the prompt once (its keys and values kept), then every
trie token the model must read, each once, with a tree attention mask: a token attends to the
prompt and to its own ancestors only, at the position of its depth after the prompt, so the
logits at a branching node are those of its path alone, as if the model had read that path
after the prompt. A depth-first walk with one KV cache, as the paper describes, needs a model
call per branching node (issue 29: 41 on the demo question, 7 s on an H100 where one pass over
the same prompt takes 82 ms). Tries of more than ``TREE_ROWS`` tokens take one more call per
``TREE_ROWS`` (each attends to the rows before it through the cache), which bounds the mask
and, for eager attention, the score matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag_chat.base import cancel
from htmlrag_chat.base.prompts import load_prompt
from htmlrag_chat.html.blocks import BlockTree, render_path
from htmlrag_chat.html.pathtags import to_numbered_html
from htmlrag_chat.modelio.device import pick_device
from htmlrag_chat.modelio.extras import needed
from htmlrag_chat.modelio.loader import cache_argument, load_causal_lm
from htmlrag_chat.scoring import DEFAULT_GEN_MODEL, ContextTooLong
from htmlrag_chat.scoring.token_tree import TokenTrie, TreeLayout, TrieNode

with needed("transformers", "the generative pruner (stage 2)"):
    import torch

TREE_ROWS = 2048  # trie tokens per forward call (the 20 bench questions read 87 at most)


@dataclass
class GenStats:
    """The cost of one scoring run (``--stats`` reports these)."""

    prompt_tokens: int = 0
    trie_nodes: int = 0
    forward_calls: int = 0  # the prompt's, then one per TREE_ROWS trie tokens read
    prefill_tokens: int = 0  # tokens run through the model in total
    skipped_nodes: int = 0  # trie nodes never read: no branching node at or below them


@dataclass
class GenerativeScorer:
    model_name: str = DEFAULT_GEN_MODEL
    device: str | None = None
    tree_rows: int = TREE_ROWS  # trie tokens per forward call (bounds the mask's memory)
    name: str = "gen"
    last_stats: GenStats = field(default_factory=GenStats)

    def score(self, query: str, tree: BlockTree) -> list[float]:
        prompt = self.prompt_ids(query, to_numbered_html(tree.document))
        return self.score_paths(prompt, self.path_ids(tree))

    def path_ids(self, tree: BlockTree) -> list[list[int]]:
        """Each block's path as the model would write it: its tokens, then end of turn."""
        _, tokenizer = self._load()
        end = tokenizer.eos_token_id
        return [
            [*tokenizer.encode(render_path(block.path), add_special_tokens=False), end]
            for block in tree.blocks
        ]

    def score_paths(self, prompt: Sequence[int], paths: Sequence[Sequence[int]]) -> list[float]:
        """The log-probability of each token path after ``prompt``, renormalized over the
        paths given (each ends with the end-of-turn token, so none is a prefix of another)."""
        model, _ = self._load()
        needed = len(prompt) + max((len(path) for path in paths), default=0)
        if needed > self.context_limit():
            raise ContextTooLong(needed, self.context_limit())
        trie = TokenTrie.build(paths)
        layout = TreeLayout.of(trie)
        self.last_stats = stats = GenStats(
            prompt_tokens=len(prompt),
            trie_nodes=trie.nodes,
            skipped_nodes=trie.nodes - len(layout.tokens),
        )
        with torch.inference_mode():
            children = _child_logprobs(model, prompt, layout, stats, self.tree_rows)
        return _path_scores(trie, children, len(paths))

    def prompt_ids(self, query: str, html: str) -> list[int]:
        """The pruner prompt in the model's chat template, control tokens in the question
        and page encoded as text. Tokenizers without a template get the plain prompt."""
        _, tokenizer = self._load()
        text = load_prompt("pruner").format(html=html, question=query)
        if getattr(tokenizer, "chat_template", None):
            encoded = tokenizer.apply_chat_template(
                [{"role": "user", "content": text}],
                add_generation_prompt=True,
                tokenize=True,
                sanitize_control_tokens=True,
                return_dict=True,
            )
            return list(encoded["input_ids"])
        bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        return bos + tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)

    def context_limit(self) -> int:
        model, _ = self._load()
        return int(getattr(model.config, "max_position_embeddings", 0) or 2**31)

    def _load(self) -> tuple[Any, Any]:
        return load_causal_lm(self.model_name, pick_device(self.device))


def _child_logprobs(
    model: Any, prompt: Sequence[int], layout: TreeLayout, stats: GenStats, rows: int
) -> dict[int, list[float]]:
    """The log-probabilities of each branching node's children (in the order of its
    ``children``), by ``id`` of the node: the prompt's pass, then the tree's."""
    if not layout.branching:
        return {}  # one path: probability 1, no model call
    device, name = model.device, cache_argument(model)
    cancel.check()
    stats.forward_calls += 1
    stats.prefill_tokens += len(prompt)
    out = model(input_ids=torch.tensor([prompt], device=device), use_cache=True, logits_to_keep=1)
    cache = getattr(out, name)
    branching = layout.branching
    found = _softmax_children(out.logits[0], [node for row, node in branching if row < 0])
    for start in range(0, len(layout.tokens), rows):
        stop = min(start + rows, len(layout.tokens))
        here = [(row - start, node) for row, node in branching if start <= row < stop]
        cancel.check()
        stats.forward_calls += 1
        stats.prefill_tokens += stop - start
        depths = torch.tensor(layout.depths[start:stop], device=device)
        out = model(
            input_ids=torch.tensor([layout.tokens[start:stop]], device=device),
            attention_mask=_tree_mask(layout, len(prompt), start, stop, model.dtype, device),
            position_ids=(depths + (len(prompt) - 1))[None],
            use_cache=True,
            logits_to_keep=torch.tensor([row for row, _ in here] or [0], device=device),
            **{name: cache},
        )
        found |= _softmax_children(out.logits[0], [node for _, node in here])
    return found


def _tree_mask(
    layout: TreeLayout, prompt: int, start: int, stop: int, dtype: torch.dtype, device: Any
) -> torch.Tensor:
    """The additive 4D mask of trie rows ``start:stop`` over the prompt and the rows up to
    ``stop``: 0 where a row may attend (the prompt, its ancestors, itself), else the
    dtype's minimum. In preorder, row ``j`` is ``i`` or an ancestor of it exactly when
    ``j <= i < ends[j]``."""
    rows = torch.arange(start, stop, device=device)[:, None]
    columns = torch.arange(stop, device=device)[None, :]
    ends = torch.tensor(layout.ends[:stop], device=device)[None, :]
    allowed = torch.cat(
        [
            torch.ones(stop - start, prompt, dtype=torch.bool, device=device),
            (columns <= rows) & (rows < ends),
        ],
        dim=1,
    )
    mask = torch.zeros(allowed.shape, dtype=dtype, device=device)
    return mask.masked_fill_(~allowed, torch.finfo(dtype).min)[None, None]


def _softmax_children(logits: torch.Tensor, nodes: Sequence[TrieNode]) -> dict[int, list[float]]:
    """Each node's children renormalized over themselves, from the node's row of ``logits``
    (one row per node, in order)."""
    if not nodes:
        return {}
    width = max(len(node.children) for node in nodes)
    tokens = torch.zeros(len(nodes), width, dtype=torch.long)
    padding = torch.ones(len(nodes), width, dtype=torch.bool)
    for index, node in enumerate(nodes):
        tokens[index, : len(node.children)] = torch.tensor(list(node.children))
        padding[index, : len(node.children)] = False
    picked = logits[: len(nodes)].float().gather(1, tokens.to(logits.device))
    picked = picked.masked_fill(padding.to(logits.device), float("-inf"))
    rows = torch.log_softmax(picked, dim=-1).tolist()
    return {id(node): row[: len(node.children)] for node, row in zip(nodes, rows, strict=True)}


def _path_scores(trie: TokenTrie, children: dict[int, list[float]], count: int) -> list[float]:
    """Each block's score: the log-probabilities along its path summed, from the root."""
    scores = [0.0] * count
    stack = [(trie.root, 0.0)]
    while stack:
        node, logprob = stack.pop()
        for block in node.blocks:
            scores[block] = logprob
        found = children.get(id(node))
        for index, child in enumerate(node.children.values()):
            stack.append((child, logprob + (found[index] if found else 0.0)))
    return scores
