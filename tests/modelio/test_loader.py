"""Model loading: concurrent loads from several threads, straight onto the device asked for.

transformers 5 patches process-wide state while it builds a model (issue 29): a
sentence-transformers model loading in one thread while a causal LM with tied embeddings
loads in another left the LM's output layer on the meta device in 28 of 30 tries. The loads
here are the package's own (``load_embedding_model``, ``load_causal_lm``) of real models:
the bundled MiniLM through sentence-transformers, an untied and a tied tiny Llama.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.modelio.loader import load_causal_lm, load_count
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL
from htmlrag_chat.scoring.embed import load_embedding_model
from tests.conftest import import_demo

ROUNDS = 8
DEMO = Path(__file__).resolve().parents[2] / "demo"


def fresh_name(here: Path, folder: Path, name: str) -> str:
    """Another path to ``folder``, in ``here``: a model name the process has not loaded."""
    os.symlink(folder, here / name)
    return str(here / name)


def no_meta(model: Any) -> bool:
    return all(parameter.device.type != "meta" for parameter in model.parameters())


def load_together(*loads: Callable[[], Any]) -> list[Any]:
    """Each of ``loads`` in its own thread, all let go at once; what one raised is raised."""
    start = threading.Barrier(len(loads))

    def together(load: Callable[[], Any]) -> Any:
        start.wait()
        return load()

    with ThreadPoolExecutor(len(loads)) as pool:
        return list(pool.map(together, loads))


def test_concurrent_loads_of_an_embedding_model_and_two_causal_lms_never_fail(
    tmp_path: Path, max_pooled_minilm: Path, tiny_lm_dir: Path, tiny_tied_lm_dir: Path
) -> None:
    import torch

    for round in range(ROUNDS):
        minilm, untied, tied = (
            fresh_name(tmp_path, folder, f"{round}-{kind}")
            for kind, folder in (
                ("minilm", max_pooled_minilm),
                ("untied", tiny_lm_dir),
                ("tied", tiny_tied_lm_dir),
            )
        )
        before = load_count()
        embedding, (untied_lm, _), (tied_lm, _) = load_together(
            partial(load_embedding_model, minilm, "cpu"),
            partial(load_causal_lm, untied, "cpu"),
            partial(load_causal_lm, tied, "cpu"),
        )
        assert load_count() == before + 3
        assert no_meta(embedding) and no_meta(untied_lm) and no_meta(tied_lm)
        assert tied_lm.lm_head.weight is tied_lm.model.embed_tokens.weight
        with torch.inference_mode():
            logits = tied_lm(input_ids=torch.tensor([[1, 2, 3]])).logits
        assert torch.isfinite(logits).all()
        assert embedding.encode(["a sentence"]).shape == (1, 384)


def test_a_model_asked_for_again_is_not_loaded_again(tmp_path: Path, tiny_lm_dir: Path) -> None:
    name = fresh_name(tmp_path, tiny_lm_dir, "again")
    first = load_causal_lm(name, "cpu")
    count = load_count()
    with ThreadPoolExecutor(4) as pool:
        again = list(pool.map(lambda _: load_causal_lm(name, "cpu"), range(4)))
    assert all(model is first[0] for model, _ in again)
    assert load_count() == count


def test_ask_loads_the_reader_and_the_pruner_on_the_device_asked_for(
    tmp_path: Path, tiny_lm_dir: Path, tiny_tied_lm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--device`` reaches the loading code: both models are loaded for it, once, in the
    device's dtype (a GPU's placement by ``device_map`` is measured by bench/gpu.py)."""
    import torch

    recording = import_demo(tmp_path)
    capsys.readouterr()  # what the import printed
    reader = fresh_name(tmp_path, tiny_lm_dir, "reader")
    pruner = fresh_name(tmp_path, tiny_tied_lm_dir, "pruner")
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]
    argv = [
        f"--replay={recording}", "ask", question, "--reader", "local", "--model", reader,
        "--gen-model", pruner, "--device", "cpu", "--max-tokens", "8", "--json",
    ]  # fmt: skip
    load_embedding_model(DEFAULT_EMBED_MODEL, "cpu")  # loaded by earlier tests, or now
    before = load_count()
    assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["model"] == reader and "gen/score" in record["timings_ms"]
    assert load_count() == before + 2  # the reader's tokenizer comes with its model
    for name in (reader, pruner):
        model, _ = load_causal_lm(name, "cpu")  # the one ask loaded: no load now
        assert model.device.type == "cpu" and model.dtype == torch.float32 and no_meta(model)
    assert load_count() == before + 2
