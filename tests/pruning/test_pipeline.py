from __future__ import annotations

import pytest

from htmlrag_chat.base.events import Notice, StageFinished
from htmlrag_chat.pruning.pipeline import PageInput, Stage, load_pages, prune_document
from htmlrag_chat.scoring.bm25 import BM25Scorer
from htmlrag_chat.scoring.embed import EmbeddingScorer
from tests.conftest import PAGES
from tests.tiny_models import make_tiny_lm


def documents(count: int = 3):
    return load_pages([PageInput(p.name, p.data) for p in PAGES[:count]]).document


@pytest.fixture(scope="module")
def gen(tiny_lm_dir):
    from htmlrag_chat.scoring.generative import GenerativeScorer

    return GenerativeScorer(str(tiny_lm_dir), device="cpu")


def test_two_stages_prune_to_each_budget_and_report_per_stage(gen, tiny_counter):
    events = []
    stages = [Stage(EmbeddingScorer(device="cpu"), 1500, 256), Stage(gen, 400, 128)]
    results = prune_document(documents(), PAGES[0].question, stages, tiny_counter, events.append)
    embed, generative = results
    assert embed.result.tokens_after <= 1500 < embed.result.tokens_before
    # Stage 2 starts from stage 1's output (its block-wise count runs slightly high).
    assert generative.result.tokens_before <= embed.result.tokens_after * 1.05
    assert tiny_counter.count(generative.result.document.to_html()) <= 400
    finished = {e.stage: e for e in events if isinstance(e, StageFinished)}
    assert set(finished) == {
        f"{s}/{step}" for s in ("embed", "gen") for step in ("blocks", "score", "prune")
    }
    assert finished["gen/score"].counts["forward_calls"] > 0
    assert generative.counts["prompt_tokens"] > 0


@pytest.mark.parametrize("only", ["embed", "gen", "bm25"])
def test_either_stage_alone(only, gen, tiny_counter):
    scorer = {"embed": EmbeddingScorer(device="cpu"), "gen": gen, "bm25": BM25Scorer()}[only]
    (result,) = prune_document(documents(1), "Tappara", [Stage(scorer, 300, 64)], tiny_counter)
    assert result.name == only
    assert result.result.tokens_after <= 300


def test_input_too_long_for_the_model_is_shrunk_first(tmp_path, tiny_tokenizer_dir, tiny_counter):
    from htmlrag_chat.scoring.generative import GenerativeScorer

    small = GenerativeScorer(
        str(make_tiny_lm(tmp_path / "lm", tiny_tokenizer_dir, 1024)), device="cpu"
    )
    events = []
    (result,) = prune_document(
        documents(2), "Tappara", [Stage(small, 200, 64)], tiny_counter, events.append
    )
    notices = [e.message for e in events if isinstance(e, Notice)]
    assert notices and "reads at most 1024" in notices[0] and "pruned with BM25" in notices[0]
    assert result.result.tokens_after <= 200
    assert small.last_stats.prompt_tokens < 1024
