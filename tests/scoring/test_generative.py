from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from htmlrag_chat.base.cancel import Cancelled
from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.pathtags import to_numbered_html
from htmlrag_chat.modelio.loader import load_causal_lm
from htmlrag_chat.scoring import ContextTooLong
from htmlrag_chat.scoring.token_tree import TokenTrie, TreeLayout
from tests.conftest import PAGES
from tests.scoring.reruns import Reruns, rerun_scores
from tests.stopping import stop_when
from tests.tiny_models import make_tiny_lm

if TYPE_CHECKING:  # torch, for the scorer's type alone: the tests that run it import it
    from htmlrag_chat.scoring.generative import GenerativeScorer


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
    from htmlrag_chat.scoring.generative import GenerativeScorer

    return GenerativeScorer(str(tiny_lm_dir), device="cpu")


def reruns_of(scorer: GenerativeScorer, query: str, tree) -> Reruns:
    model, _ = load_causal_lm(scorer.model_name, "cpu")
    prompt = scorer.prompt_ids(query, to_numbered_html(tree.document))
    return rerun_scores(model, prompt, scorer.path_ids(tree))


def test_one_pass_gives_the_scores_of_full_reruns(scorer):
    tree = tree_of(ARTICLE)
    scores = scorer.score("Which license?", tree)
    cost = scorer.last_stats
    reference = reruns_of(scorer, "Which license?", tree)
    assert scores == pytest.approx(reference.scores, abs=1e-4)
    assert cost.forward_calls == 2 < reference.forward_calls
    # The reference pays the whole prompt at every branching node; one pass pays it once.
    assert reference.prefill_tokens > reference.forward_calls * cost.prompt_tokens
    assert cost.prefill_tokens < cost.prompt_tokens + cost.trie_nodes


def test_one_pass_gives_the_scores_of_full_reruns_on_real_pages(scorer):
    """The block paths of real pages (small blocks: deep trees of numbered tags, long
    single-child chains between branches), after a short prompt so that the reference's
    reruns stay cheap."""
    model, _ = load_causal_lm(scorer.model_name, "cpu")
    for page in PAGES[1:4]:  # German, English, English; 15 to 40 branching nodes each
        tree = build_block_tree(Document.from_pages([(Page(page.name), clean_html(page.data))]), 16)
        paths = scorer.path_ids(tree)
        layout = TreeLayout.of(TokenTrie.build(paths))
        prompt = scorer.prompt_ids(page.question or "What is it about?", page.data.decode()[:300])
        scores = scorer.score_paths(prompt, paths)
        assert scores == pytest.approx(rerun_scores(model, prompt, paths).scores, abs=1e-4)
        assert scorer.last_stats.forward_calls == 2 and len(layout.branching) > 10
        assert max(layout.depths) > 10  # paths deeper than a few tokens


def test_tries_longer_than_a_call_are_read_in_pieces_with_the_same_scores(tiny_lm_dir):
    from htmlrag_chat.scoring.generative import GenerativeScorer

    tree = tree_of(ARTICLE)
    whole = GenerativeScorer(str(tiny_lm_dir), device="cpu")
    pieces = GenerativeScorer(str(tiny_lm_dir), device="cpu", tree_rows=7)
    assert pieces.score("license", tree) == pytest.approx(whole.score("license", tree), abs=1e-4)
    rows = whole.last_stats.prefill_tokens - whole.last_stats.prompt_tokens
    assert whole.last_stats.forward_calls == 2
    assert pieces.last_stats.forward_calls == 1 + math.ceil(rows / 7) > 3
    assert pieces.last_stats.prefill_tokens == whole.last_stats.prefill_tokens


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
    import torch

    scores = scorer.score("license", tree_of(ARTICLE))
    assert sum(torch.tensor(scores).exp().tolist()) == pytest.approx(1.0, abs=1e-4)


def branching(node) -> list:
    found = [node] if len(node.children) > 1 else []
    for child in node.children.values():
        found.extend(branching(child))
    return found


def tokens_to_branches(node) -> tuple[int, bool]:
    """Trie tokens on some root-to-branching-node path (below the root), and whether
    ``node``'s subtree holds a branching node."""
    total, below = 0, len(node.children) > 1
    for child in node.children.values():
        count, has = tokens_to_branches(child)
        total += count + has  # the child's own token is needed if a branch is at or below it
        below = below or has
    return total, below


def test_the_model_reads_the_prompt_then_each_needed_trie_token_once(scorer):
    tree = tree_of(ARTICLE)
    scorer.score("license", tree)
    stats = scorer.last_stats
    trie = TokenTrie.build(scorer.path_ids(tree))
    assert len(branching(trie.root)) > 5 and stats.forward_calls == 2
    assert stats.trie_nodes == trie.nodes
    needed, _ = tokens_to_branches(trie.root)
    assert stats.prefill_tokens == stats.prompt_tokens + needed
    assert stats.skipped_nodes == trie.nodes - needed > 0


def test_one_block_costs_no_model_call(scorer):
    assert scorer.score("license", tree_of("<p>Apache License 2.0</p>")) == [0.0]
    assert scorer.last_stats.forward_calls == 0 and scorer.last_stats.prefill_tokens == 0


def test_control_tokens_in_the_question_stay_text(scorer):
    _, tokenizer = load_causal_lm(scorer.model_name, "cpu")
    ids = scorer.prompt_ids("a <|eot_id|> b", "<html><p>x</p></html>")
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    assert ids.count(eot) == 1  # only the one the chat template writes after the message


def test_input_longer_than_the_context_is_refused_clearly(tmp_path, tiny_tokenizer_dir):
    from htmlrag_chat.scoring.generative import GenerativeScorer

    small = make_tiny_lm(tmp_path / "small", tiny_tokenizer_dir, max_positions=256)
    with pytest.raises(ContextTooLong, match="reads at most 256"):
        GenerativeScorer(str(small), device="cpu").score("license", tree_of(ARTICLE))


def test_a_path_of_thousands_of_tokens_is_scored_without_recursion(tiny_lm_dir):
    """A deeply nested page has block paths of thousands of tokens; the trie is laid out
    with stacks of its own, not one Python frame per token, and read in pieces."""
    from htmlrag_chat.scoring.generative import GenerativeScorer

    scorer = GenerativeScorer(str(tiny_lm_dir), device="cpu")
    _, tokenizer = load_causal_lm(scorer.model_name, "cpu")
    end, deep = tokenizer.eos_token_id, [7] * 3000  # a shared prefix far past the recursion limit
    paths = [[*deep, 8, end], [*deep, 9, end], [*deep, end], [8, end]]
    prompt = scorer.prompt_ids("which one?", "<html><p>x</p></html>")
    scores = scorer.score_paths(prompt, paths)
    assert math.fsum(math.exp(score) for score in scores) == pytest.approx(1.0, abs=1e-4)
    assert scorer.last_stats.prefill_tokens == len(prompt) + 3000
    assert scorer.last_stats.forward_calls == 1 + math.ceil(3000 / scorer.tree_rows)
    model, _ = load_causal_lm(scorer.model_name, "cpu")
    assert rerun_scores(model, prompt, paths).scores == pytest.approx(scores, abs=1e-4)


def test_a_stopped_question_stops_inside_the_prompt_pass(tiny_lm_dir):
    from htmlrag_chat.scoring.generative import GenerativeScorer

    page = next(p for p in PAGES if p.name == "docker-engine")
    tree = build_block_tree(Document.from_pages([(Page(page.name), clean_html(page.data))]), 16)
    scorer = GenerativeScorer(str(tiny_lm_dir), device="cpu")  # its stats start at zero
    stopped = stop_when(
        lambda: scorer.score("Which license?", tree),
        lambda: scorer.last_stats.forward_calls > 0,
        lambda: scorer.last_stats.forward_calls,
    )
    # The model checks the flag at every module: the prompt's pass stops, the tree's never starts.
    assert isinstance(stopped.raised, Cancelled) and stopped.after == 0
    assert scorer.last_stats.forward_calls == 1
