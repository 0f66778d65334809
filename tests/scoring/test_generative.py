from __future__ import annotations

import math

import pytest
import torch

from htmlrag_chat.cancel import Cancelled
from htmlrag_chat.html.blocks import Document, Page, build_block_tree, render_path
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.loader import load_causal_lm
from htmlrag_chat.scoring import ContextTooLong
from htmlrag_chat.scoring.generative import GenerativeScorer, TokenTrie
from tests.conftest import PAGES
from tests.stopping import stop_when
from tests.tiny_models import make_tiny_lm


def tree_of(html: str, max_words: int = 8):
    return build_block_tree(Document.from_pages([(Page("t"), clean_html(html))]), max_words)


ARTICLE = (
    "<body><h1>Docker Engine</h1>"
    + "".join(
        f"<section><h2>Part {s}</h2>"
        + "".join(
            f"<p>Paragraph {s}.{i} about containers, images and licenses.</p>" for i in range(4)
        )
        + "</section>"
        for s in range(4)
    )
    + "<ul><li>Apache License 2.0</li><li>Linux</li><li>Windows</li></ul></body>"
)


@pytest.fixture(scope="module")
def scorer(tiny_lm_dir):
    return GenerativeScorer(str(tiny_lm_dir), device="cpu")


def paths_of(scorer: GenerativeScorer, tree) -> list[list[int]]:
    _, tokenizer = load_causal_lm(scorer.model_name, "cpu")
    return [
        [*tokenizer.encode(render_path(b.path), add_special_tokens=False), tokenizer.eos_token_id]
        for b in tree.blocks
    ]


def test_cached_prefix_logits_equal_a_full_forward(scorer):
    model, _ = load_causal_lm(scorer.model_name, "cpu")
    ids = torch.randint(0, model.config.vocab_size, (1, 300))
    with torch.inference_mode():
        full = model(input_ids=ids, logits_to_keep=1).logits[0, -1]
        prefix = model(input_ids=ids[:, :250], use_cache=True)
        cache = prefix.past_key_values
        model(input_ids=ids[:, 250:280], past_key_values=cache, use_cache=True)
        cache.crop(-30)  # back to the shared prefix, as the walk does between siblings
        reused = model(input_ids=ids[:, 250:], past_key_values=cache, logits_to_keep=1)
    assert torch.allclose(reused.logits[0, -1], full, atol=1e-4)


def test_cache_reuse_gives_the_scores_of_full_reruns(scorer):
    tree = tree_of(ARTICLE)
    cached = scorer.score("Which license?", tree)
    cost = scorer.last_stats
    naive = GenerativeScorer(scorer.model_name, device="cpu", reuse_cache=False)
    assert naive.score("Which license?", tree) == pytest.approx(cached, abs=1e-4)
    assert naive.last_stats.forward_calls == cost.forward_calls
    # The reference's way pays the whole prompt at every call; ours pays it once.
    assert naive.last_stats.prefill_tokens > cost.forward_calls * cost.prompt_tokens
    assert cost.prefill_tokens < cost.prompt_tokens + cost.trie_nodes


def test_scores_depend_on_the_question_and_the_page(scorer):
    tree = tree_of(ARTICLE)
    one = scorer.score("Which license is Docker released under?", tree)
    two = scorer.score("What operating systems are supported?", tree)
    assert one != pytest.approx(two, abs=1e-6)
    other_page = tree_of(ARTICLE.replace("containers", "boats"))
    assert [b.path for b in other_page.blocks] == [b.path for b in tree.blocks]
    assert scorer.score("Which license is Docker released under?", other_page) != pytest.approx(
        one, abs=1e-6
    )


def test_probabilities_over_paths_sum_to_one(scorer):
    scores = scorer.score("license", tree_of(ARTICLE))
    assert sum(torch.tensor(scores).exp().tolist()) == pytest.approx(1.0, abs=1e-4)


def branching(node) -> list:
    found = [node] if len(node.children) > 1 else []
    for child in node.children.values():
        found.extend(branching(child))
    return found


def tokens_to_branches(node, depth: int = 0) -> tuple[int, bool]:
    """Trie tokens on some root-to-branching-node path (below the root), and whether
    ``node``'s subtree holds a branching node."""
    total, below = 0, len(node.children) > 1
    for child in node.children.values():
        count, has = tokens_to_branches(child, depth + 1)
        total += count + has  # the child's own token is needed if a branch is at or below it
        below = below or has
    return total, below


def test_model_calls_match_branching_nodes_and_prefill_is_minimal(scorer):
    tree = tree_of(ARTICLE)
    scorer.score("license", tree)
    stats = scorer.last_stats
    trie = TokenTrie.build(paths_of(scorer, tree))
    assert stats.forward_calls == len(branching(trie.root)) > 5
    assert stats.trie_nodes == trie.nodes
    assert stats.skipped_nodes == trie.nodes + 1 - len(branching(trie.root)) - len(tree.blocks)
    needed, _ = tokens_to_branches(trie.root)
    assert stats.prefill_tokens == stats.prompt_tokens + needed


def test_control_tokens_in_the_question_stay_text(scorer):
    _, tokenizer = load_causal_lm(scorer.model_name, "cpu")
    ids = scorer.prompt_ids("a <|eot_id|> b", "<html><p>x</p></html>")
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    assert ids.count(eot) == 1  # only the one the chat template writes after the message


def test_input_longer_than_the_context_is_refused_clearly(tmp_path, tiny_tokenizer_dir):
    small = make_tiny_lm(tmp_path / "small", tiny_tokenizer_dir, max_positions=256)
    with pytest.raises(ContextTooLong, match="reads at most 256"):
        GenerativeScorer(str(small), device="cpu").score("license", tree_of(ARTICLE))


def test_a_path_of_thousands_of_tokens_is_walked_without_recursion(tiny_lm_dir):
    """A deeply nested page has block paths of thousands of tokens; the walk goes down
    them with a stack of its own, not one Python frame per token."""
    scorer = GenerativeScorer(str(tiny_lm_dir), device="cpu")
    _, tokenizer = load_causal_lm(scorer.model_name, "cpu")
    end, deep = tokenizer.eos_token_id, [7] * 3000  # a shared prefix far past the recursion limit
    paths = [[*deep, 8, end], [*deep, 9, end], [*deep, end], [8, end]]
    prompt = scorer.prompt_ids("which one?", "<html><p>x</p></html>")
    scores = scorer.score_paths(prompt, paths)
    assert math.fsum(math.exp(score) for score in scores) == pytest.approx(1.0, abs=1e-4)
    assert scorer.last_stats.forward_calls == 2 and scorer.last_stats.skipped_nodes > 2900
    naive = GenerativeScorer(scorer.model_name, device="cpu", reuse_cache=False)
    assert naive.score_paths(prompt, paths) == pytest.approx(scores, abs=1e-4)


def test_a_stopped_question_stops_the_walk_at_its_next_model_call(tiny_lm_dir):
    page = next(p for p in PAGES if p.name == "docker-engine")
    tree = build_block_tree(Document.from_pages([(Page(page.name), clean_html(page.data))]), 16)
    scorer = GenerativeScorer(str(tiny_lm_dir), device="cpu")  # its stats start at zero
    stopped = stop_when(
        lambda: scorer.score("Which license?", tree),
        lambda: scorer.last_stats.forward_calls > 1,
        lambda: scorer.last_stats.forward_calls,
    )
    # At most the call under way: the walk checks at every node, the model at every module.
    assert isinstance(stopped.raised, Cancelled) and stopped.after <= 1
    assert scorer.last_stats.forward_calls < len(tree.blocks)
