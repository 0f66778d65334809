"""The reference's cost and scores for stage 2: the whole sequence through the model again at
every branching node of the token trie (no cache, no tree mask). The tests and
bench/model_pruning.py hold the one-pass scorer to these scores."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from htmlrag_chat.scoring.token_tree import TokenTrie


@dataclass
class Reruns:
    scores: list[float]
    forward_calls: int
    prefill_tokens: int


def rerun_scores(model: Any, prompt: Sequence[int], paths: Sequence[Sequence[int]]) -> Reruns:
    """Each path's log-probability after ``prompt``, renormalized over the paths: at each
    branching node, the prompt and the path to it run again, and the softmax of the children's
    logits at the last position gives their probabilities."""
    import torch  # here: a module importing this one collects without torch

    trie = TokenTrie.build(paths)
    result = Reruns([0.0] * len(paths), 0, 0)
    stack: list[tuple[Any, list[int], float]] = [(trie.root, [], 0.0)]
    with torch.inference_mode():
        while stack:
            node, path, logprob = stack.pop()
            for block in node.blocks:
                result.scores[block] = logprob
            children = list(node.children.values())
            steps = [0.0] * len(children)
            if len(children) > 1:
                ids = torch.tensor([[*prompt, *path]], device=model.device)
                logits = model(input_ids=ids, logits_to_keep=1).logits[0, -1].float()
                tokens = [child.token for child in children]
                steps = torch.log_softmax(logits[tokens], dim=-1).tolist()
                result.forward_calls += 1
                result.prefill_tokens += ids.shape[1]
            for child, step in zip(children, steps, strict=True):
                stack.append((child, [*path, child.token], logprob + step))
    return result
