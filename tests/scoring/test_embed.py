from __future__ import annotations

import pytest

from htmlrag_chat.cancel import Cancelled
from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL
from htmlrag_chat.scoring.embed import (
    BGE_QUERY_INSTRUCTION,
    EmbeddingScorer,
    MemoryEmbeddingCache,
    load_embedding_model,
    query_instruction_for,
)
from tests.conftest import PAGES
from tests.stopping import stop_when


def tree_of(*paragraphs: str):
    html = "<body>" + "".join(f"<p>{p}</p>" for p in paragraphs) + "</body>"
    return build_block_tree(Document.from_pages([(Page("t"), clean_html(html))]), max_words=12)


PARAGRAPHS = (
    "The recipe needs flour, butter and two eggs.",
    "Docker is licensed under the Apache License, Version 2.0.",
    "The match ended three to nothing after a late goal.",
)


def test_the_relevant_block_scores_highest():
    scores = EmbeddingScorer(device="cpu").score(
        "Under which license is Docker released?", tree_of(*PARAGRAPHS)
    )
    assert scores.index(max(scores)) == 1
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_a_page_seen_again_costs_no_model_call():
    cache = MemoryEmbeddingCache()
    first = EmbeddingScorer(device="cpu", cache=cache)
    scores = first.score("license", tree_of(*PARAGRAPHS))
    assert first.encoded == 4  # three paragraphs and the question
    again = EmbeddingScorer(device="cpu", cache=cache)
    assert again.score("license", tree_of(*PARAGRAPHS)) == pytest.approx(scores, abs=1e-6)
    assert again.encoded == 0
    again.score("license", tree_of(*PARAGRAPHS, "A new paragraph."))
    assert again.encoded == 1


def test_models_load_once_per_process():
    assert load_embedding_model(DEFAULT_EMBED_MODEL, "cpu") is load_embedding_model(
        DEFAULT_EMBED_MODEL, "cpu"
    )


def test_bge_models_get_their_query_instruction():
    assert query_instruction_for("BAAI/bge-large-en-v1.5") == BGE_QUERY_INSTRUCTION
    assert query_instruction_for(DEFAULT_EMBED_MODEL) == ""


def test_a_stopped_question_stops_the_embedding_stage_within_half_a_second():
    document = Document.from_pages([(Page(p.name), clean_html(p.data)) for p in PAGES])
    tree = build_block_tree(document, 256)
    scorer = EmbeddingScorer(device="cpu")  # an empty cache: every block must be embedded
    model = load_embedding_model(scorer.model_name, "cpu")
    batches = 0

    def count(module: object, args: object) -> None:
        nonlocal batches
        batches += 1

    handle = model.register_forward_pre_hook(count)  # once per batch the model runs
    try:
        stopped = stop_when(lambda: scorer.score("docker license", tree), lambda: batches > 0)
    finally:
        handle.remove()
    assert len(tree.blocks) > 100  # seconds of work on a CPU, stopped inside its first batch
    assert isinstance(stopped.raised, Cancelled) and stopped.seconds < 0.5
    assert scorer.encoded == 0
