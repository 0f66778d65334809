from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from htmlrag_chat.base.cancel import Cancelled
from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, bundled_embedding
from htmlrag_chat.scoring.bert import BertEncoder
from htmlrag_chat.scoring.embed import (
    BGE_QUERY_INSTRUCTION,
    EmbeddingScorer,
    MemoryEmbeddingCache,
    load_embedding_model,
    numpy_layout,
    query_instruction_for,
)
from tests.conftest import PAGES
from tests.stopping import CountedCalls, stop_when


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


def test_on_the_cpu_bert_folders_run_in_numpy_and_the_rest_in_sentence_transformers(
    max_pooled_minilm: Path,
):
    from sentence_transformers import SentenceTransformer

    assert isinstance(load_embedding_model(DEFAULT_EMBED_MODEL, "cpu"), BertEncoder)
    assert numpy_layout(DEFAULT_EMBED_MODEL, "cuda") is None  # GPUs keep fp16 and torch
    assert numpy_layout(str(max_pooled_minilm), "cpu") is None
    assert isinstance(load_embedding_model(str(max_pooled_minilm), "cpu"), SentenceTransformer)


def test_a_hub_model_already_in_the_cache_runs_in_numpy(tmp_path, monkeypatch):
    from huggingface_hub import constants

    bundled = bundled_embedding(DEFAULT_EMBED_MODEL)
    repo = tmp_path / "models--someone--minilm-copy"
    shutil.copytree(bundled, repo / "snapshots" / "0123abcd", copy_function=os.symlink)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd", encoding="utf-8")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    layout = numpy_layout("someone/minilm-copy", "cpu")
    assert layout is not None and layout.folder == repo / "snapshots" / "0123abcd"
    assert numpy_layout("someone/not-downloaded", "cpu") is None


def embed_all_blocks_and_stop(model_name: str, begun: Callable[[], bool]) -> None:
    """Stop a question while its embedding stage works through every block of the fixture
    pages (seconds of work on a CPU), once ``begun`` says the model is inside a batch."""
    document = Document.from_pages([(Page(p.name), clean_html(p.data)) for p in PAGES])
    tree = build_block_tree(document, 256)
    scorer = EmbeddingScorer(model_name, device="cpu")  # an empty cache: all are embedded
    stopped = stop_when(lambda: scorer.score("docker license", tree), begun)
    assert len(tree.blocks) > 100
    assert isinstance(stopped.raised, Cancelled) and stopped.seconds < 0.5
    assert scorer.encoded == 0


def test_a_stopped_question_stops_the_numpy_embedding_stage_within_half_a_second(monkeypatch):
    model = load_embedding_model(DEFAULT_EMBED_MODEL, "cpu")
    counted = CountedCalls(model.forward)
    monkeypatch.setattr(model, "forward", counted)  # once per batch, in the worker threads
    embed_all_blocks_and_stop(DEFAULT_EMBED_MODEL, lambda: counted.calls > 0)


def test_a_stopped_question_stops_sentence_transformers_within_half_a_second(
    max_pooled_minilm: Path,
):
    model = load_embedding_model(str(max_pooled_minilm), "cpu")
    batches = 0

    def count(module: object, args: object) -> None:
        nonlocal batches
        batches += 1

    handle = model.register_forward_pre_hook(count)  # once per batch the model runs
    try:
        embed_all_blocks_and_stop(str(max_pooled_minilm), lambda: batches > 0)
    finally:
        handle.remove()
