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
from htmlrag_chat.scoring.bert import MAX_WORKERS, BertEncoder
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


def embed_all_blocks_and_stop(
    model_name: str, begun: Callable[[], bool], progress: Callable[[], int], threads: int
) -> None:
    """Stop a question while its embedding stage works through every block of the fixture
    pages (seconds of work on a CPU), once ``begun`` says the model is inside a batch. The
    model checks the stop before each step that ``progress`` counts: after the stop, each
    thread running batches takes at most the step it had just been cleared for."""
    document = Document.from_pages([(Page(p.name), clean_html(p.data)) for p in PAGES])
    tree = build_block_tree(document, 256)
    scorer = EmbeddingScorer(model_name, device="cpu")  # an empty cache: all are embedded
    stopped = stop_when(lambda: scorer.score("docker license", tree), begun, progress)
    assert len(tree.blocks) > 100
    assert isinstance(stopped.raised, Cancelled) and stopped.after <= threads
    assert scorer.encoded == 0


def test_a_stopped_question_stops_the_numpy_embedding_stage_between_its_layers(monkeypatch):
    model = load_embedding_model(DEFAULT_EMBED_MODEL, "cpu")
    batches, layers = CountedCalls(model.forward), CountedCalls(model._attention)
    monkeypatch.setattr(model, "forward", batches)  # once per batch, in the worker threads
    monkeypatch.setattr(model, "_attention", layers)  # once per layer of a batch
    threads = min(len(os.sched_getaffinity(0)), MAX_WORKERS)
    embed_all_blocks_and_stop(
        DEFAULT_EMBED_MODEL, lambda: batches.calls > 0, lambda: layers.calls, threads
    )


def test_a_stopped_question_stops_sentence_transformers_between_its_modules(
    max_pooled_minilm: Path,
):
    model = load_embedding_model(str(max_pooled_minilm), "cpu")
    started = 0

    def start(module: object, args: object) -> None:
        nonlocal started
        started += 1

    # After the stop's own hooks (``make_stoppable``: the model and each block of its
    # stacks), on the same modules: a module counts once it is cleared.
    from torch.nn import ModuleList, Sequential

    stacks = [m for m in model.modules() if isinstance(m, ModuleList | Sequential)]
    checked = [model, *(block for stack in stacks for block in stack.children())]
    handles = [module.register_forward_pre_hook(start) for module in checked]
    try:
        embed_all_blocks_and_stop(str(max_pooled_minilm), lambda: started > 0, lambda: started, 1)
    finally:
        for handle in handles:
            handle.remove()
