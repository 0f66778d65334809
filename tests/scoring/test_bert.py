"""The numpy BERT encoder against sentence-transformers itself, on the bundled MiniLM and on
tiny random BERT folders saved by sentence-transformers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, bundled_embedding
from htmlrag_chat.scoring.bert import BertEncoder, BertLayout, gelu, read_layout
from tests.conftest import PAGES
from tests.tiny_models import make_tiny_sentence_bert

LONG = PAGES[0].data.decode("utf-8", "replace")  # thousands of tokens: cut at the limit
TEXTS = [
    "Docker is licensed under the Apache License, Version 2.0.",
    "hi",
    "",
    "  spaces around, and\ta tab  ",
    "Welcher Torhüter stand beim CHL-Halbfinale 2022 im Tor des EHC Red Bull München?",
    "東京タワーの高さは333メートルです。",
    "مرحبا بالعالم",
    "Emoji 🚀 and symbols ∑ ≠ ∞",
    LONG,
    " ".join(["hello world and the docker"] * 12),
]


def reference(folder: Path, texts: list[str]) -> np.ndarray:
    """What sentence-transformers makes of ``texts`` with the folder's own modules."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(texts, batch_size=64)


def load(folder: Path) -> BertEncoder:
    layout = read_layout(folder)
    assert layout is not None
    return BertEncoder.load(layout)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_sentence_bert(tmp_path_factory.mktemp("tiny-bert"))


def copy_of(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / "copy"))


def test_the_bundled_minilm_gives_sentence_transformers_vectors():
    folder = bundled_embedding(DEFAULT_EMBED_MODEL)
    assert folder is not None
    encoder = load(folder)
    assert encoder.layout == BertLayout(folder, "mean", True, 256)
    assert len(encoder.tokenizer.encode(LONG).ids) == 256  # cut, [SEP] kept last
    expected = reference(folder, TEXTS)
    # A batch of three mixes lengths and pads; a batch of one pads nothing.
    for batch_size in (3, 1):
        vectors = encoder.encode(TEXTS, batch_size=batch_size)
        assert vectors.dtype == np.float32 and vectors.shape == expected.shape
        assert np.abs(vectors - expected).max() < 1e-4
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)


@pytest.mark.parametrize(("pooling", "normalize"), [("mean", True), ("cls", False)])
def test_tiny_random_berts_give_sentence_transformers_vectors(tmp_path, pooling, normalize):
    folder = make_tiny_sentence_bert(tmp_path, pooling, normalize, max_seq_length=16)
    encoder = load(folder)
    # sentence-transformers 6 keeps the length in tokenizer_config.json, 5 and older in
    # sentence_bert_config.json (the bundled model's): both are read.
    assert (encoder.layout.pooling, encoder.layout.normalize) == (pooling, normalize)
    assert encoder.layout.max_seq_length == 16 and encoder.eps == 1e-7
    vectors = encoder.encode(TEXTS, batch_size=4)
    assert np.abs(vectors - reference(folder, TEXTS)).max() < 1e-4
    norms = np.linalg.norm(vectors, axis=1)
    assert np.allclose(norms, 1, atol=1e-5) == normalize
    unit = encoder.encode(TEXTS, normalize_embeddings=True)
    assert np.allclose(unit, vectors / norms[:, None], atol=1e-6)


def test_weights_saved_under_a_bert_prefix_load_the_same(tiny, tmp_path):
    from safetensors.numpy import load_file, save_file

    folder = copy_of(tiny, tmp_path)
    weights = load_file(folder / "model.safetensors")
    save_file(
        {f"bert.{name}": value for name, value in weights.items()}, folder / "model.safetensors"
    )
    assert np.array_equal(load(folder).encode(TEXTS), load(tiny).encode(TEXTS))


def test_the_tokenizer_configs_lowercasing_wins_as_in_transformers(tiny, tmp_path):
    folder = copy_of(tiny, tmp_path)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["do_lower_case"] = False  # tokenizer.json still lowercases
    config_path.write_text(json.dumps(config), encoding="utf-8")
    texts = ["Hello World DOCKER", "hello world docker"]
    vectors = load(folder).encode(texts)
    assert np.abs(vectors - reference(folder, texts)).max() < 1e-4
    assert np.abs(vectors[0] - vectors[1]).max() > 1e-2  # the case was kept


def edit_json(name: str, change: Callable[[dict], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / name
        content = json.loads(path.read_text(encoding="utf-8"))
        change(content)
        path.write_text(json.dumps(content), encoding="utf-8")

    return edit


NOT_RUN = {
    "max pooling": edit_json("1_Pooling/config.json", lambda c: c.update(pooling_mode="max")),
    "relative positions": edit_json(
        "config.json", lambda c: c.update(position_embedding_type="relative_key")
    ),
    "another activation": edit_json("config.json", lambda c: c.update(hidden_act="gelu_new")),
    "another architecture": edit_json("config.json", lambda c: c.update(model_type="roberta")),
    "lowercased by sentence-transformers": edit_json(
        "sentence_bert_config.json", lambda c: c.update(do_lower_case=True)
    ),
    "a Dense module": edit_json(
        "modules.json",
        lambda c: c.insert(
            2, {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.Dense"}
        ),
    ),
    "no safetensors": lambda folder: (folder / "model.safetensors").unlink(),
    "no modules.json": lambda folder: (folder / "modules.json").unlink(),
}


@pytest.mark.parametrize("change", NOT_RUN.values(), ids=NOT_RUN.keys())
def test_layouts_numpy_does_not_run_are_left_to_sentence_transformers(tiny, tmp_path, change):
    folder = copy_of(tiny, tmp_path)
    assert read_layout(folder) is not None
    change(folder)
    assert read_layout(folder) is None


def test_gelu_is_the_exact_one():
    import torch

    x = np.concatenate(
        [np.linspace(-12, 12, 100_001), np.random.default_rng(0).normal(0, 3, 10_000)]
    )
    x = x.astype(np.float32)
    expected = torch.nn.functional.gelu(torch.from_numpy(x)).numpy()
    # float32 rounding differs by a few units in the last place between builds (1.2e-6 seen
    # near x = 3); the tanh approximation is off by 4.7e-4, so 1e-5 still tells them apart.
    assert np.abs(gelu(x) - expected).max() < 1e-5
