"""Stage 2 of HtmlRAG pruning: how likely a small LM is to answer with each block's path.

The model reads the document (tags numbered as block paths), the question and an instruction
to name the path of the most relevant piece (``prompts/pruner.md``, paper Figure 4). A block's
score is the log-probability of generating its path followed by the end-of-turn token.

The block paths are tokenized and merged into a prefix tree (``TokenTrie``). Probabilities are
renormalized over the paths that exist: a node with one child passes it probability 1 at no
cost; a node with K children costs one forward step, and the softmax of the K children's
logits at the LAST position gives all K siblings their probabilities at once (the reference
reads position 0, so its scores ignore the question and the page). The walk is depth-first
and keeps one KV cache: the prompt and the path prefix shared by all blocks are run once, and
each branching node only runs the tokens between it and its nearest evaluated ancestor; when
a subtree is done the cache is cropped back. ``reuse_cache=False`` gives the reference's cost
(the whole sequence again at every branching node) with identical scores, for tests and the
benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from htmlrag_chat import cancel
from htmlrag_chat.device import pick_device
from htmlrag_chat.extras import needed
from htmlrag_chat.html.blocks import BlockTree, render_path
from htmlrag_chat.html.render import to_numbered_html
from htmlrag_chat.loader import load_causal_lm
from htmlrag_chat.prompts import load_prompt
from htmlrag_chat.scoring import DEFAULT_GEN_MODEL, ContextTooLong

with needed("transformers", "the generative pruner (stage 2)"):
    import torch


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


@dataclass
class GenStats:
    """The cost of one scoring run (``--stats`` reports these)."""

    prompt_tokens: int = 0
    trie_nodes: int = 0
    forward_calls: int = 0  # one per branching trie node
    prefill_tokens: int = 0  # tokens run through the model in total
    skipped_nodes: int = 0  # single-child nodes: probability 1, no model call


@dataclass
class GenerativeScorer:
    model_name: str = DEFAULT_GEN_MODEL
    device: str | None = None
    reuse_cache: bool = True
    name: str = "gen"
    last_stats: GenStats = field(default_factory=GenStats)

    def score(self, query: str, tree: BlockTree) -> list[float]:
        _, tokenizer = self._load()
        prompt = self.prompt_ids(query, to_numbered_html(tree.document))
        end = tokenizer.eos_token_id
        paths = [
            [*tokenizer.encode(render_path(block.path), add_special_tokens=False), end]
            for block in tree.blocks
        ]
        return self.score_paths(prompt, paths)

    def score_paths(self, prompt: Sequence[int], paths: Sequence[Sequence[int]]) -> list[float]:
        """The log-probability of each token path after ``prompt``, renormalized over the
        paths given (each ends with the end-of-turn token, so none is a prefix of another)."""
        model, _ = self._load()
        needed = len(prompt) + max((len(path) for path in paths), default=0)
        if needed > self.context_limit():
            raise ContextTooLong(needed, self.context_limit())
        trie = TokenTrie.build(paths)
        self.last_stats = GenStats(prompt_tokens=len(prompt), trie_nodes=trie.nodes)
        scores = [0.0] * len(paths)
        with torch.inference_mode():
            _Walk(model, self.last_stats, scores, self.reuse_cache).run(trie.root, prompt)
        return scores

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


@dataclass
class _Walk:
    """Depth-first walk of the token trie holding one KV cache for the current prefix.

    The walk keeps its own stack rather than recursing: a path is as many levels deep as it
    has tokens, and a deeply nested page has paths of thousands. It checks for a stopped
    question at every node (and the model at every module, ``cancel.make_stoppable``)."""

    model: Any
    stats: GenStats
    scores: list[float]
    reuse_cache: bool
    cache: Any = None
    cached: list[int] = field(default_factory=list)  # tokens whose keys are in the cache

    def run(self, root: TrieNode, prompt: Sequence[int]) -> None:
        """Score every block under ``root``, whose path starts after ``prompt``.

        A stack entry is a node to visit: its log-probability, ``pending`` (tokens on its
        path not yet run), ``fed`` (those already in the cache, a prefix of its path) and
        how far to crop the cache back first (a sibling's subtree may have extended it)."""
        stack: list[tuple[TrieNode, float, list[int], list[int], int | None]] = [
            (root, 0.0, list(prompt), [], None)
        ]
        while stack:
            node, logprob, pending, fed, rewind = stack.pop()
            cancel.check()
            if rewind is not None:
                self._rewind(rewind)
            while len(node.children) == 1:  # one way on: probability 1, no model call
                self._score(node, logprob)
                self.stats.skipped_nodes += 1
                (node,) = node.children.values()
                pending.append(node.token)
            self._score(node, logprob)
            if not node.children:
                continue
            logits = self._forward(fed, pending)
            here = [*fed, *pending]
            children = list(node.children.values())
            logprobs = torch.log_softmax(logits[[child.token for child in children]], dim=-1)
            for child, child_logprob in reversed(
                list(zip(children, logprobs.tolist(), strict=True))
            ):
                stack.append((child, logprob + child_logprob, [child.token], here, len(here)))

    def _score(self, node: TrieNode, logprob: float) -> None:
        for block in node.blocks:
            self.scores[block] = logprob

    def _forward(self, fed: list[int], pending: list[int]) -> torch.Tensor:
        """Logits for the next token after ``fed + pending``."""
        self.stats.forward_calls += 1
        device = self.model.device
        if not self.reuse_cache:  # the reference's way: the whole sequence every time
            sequence = [*fed, *pending]
            self.stats.prefill_tokens += len(sequence)
            ids = torch.tensor([sequence], device=device)
            return self.model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
        self._rewind(len(fed))
        self.stats.prefill_tokens += len(pending)
        ids = torch.tensor([pending], device=device)
        out = self.model(
            input_ids=ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1
        )
        self.cache = out.past_key_values
        self.cached = [*fed, *pending]
        return out.logits[0, -1].float()

    def _rewind(self, length: int) -> None:
        """Crop the cache back to its first ``length`` tokens (a forward pass extends it)."""
        extra = len(self.cached) - length
        if self.cache is not None and extra > 0:
            self.cache.crop(-extra)
            del self.cached[length:]
