"""Sentence-transformers BERT models run in numpy, so the CPU path imports no torch.

On a 2-core CPU, importing torch, transformers and sentence-transformers costs about 6 s, more
than the whole 5 s a cold ``ask`` may take, while the default embedding model is six
encoder layers of matrix products that numpy's BLAS runs about as fast as torch. This module
runs the folders sentence-transformers saves for a BERT (``Transformer`` over ``BertModel``
with absolute positions, then mean or CLS ``Pooling``, then an optional ``Normalize``), in
float32, and gives the same vectors as sentence-transformers to within 1e-6 (the tests hold
it to 1e-4, on the bundled all-MiniLM-L6-v2 and tiny random BERTs), so both write the same
embedding cache.
Other layouts return ``None`` from ``read_layout`` and stay with sentence-transformers.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from htmlrag_chat.base import cancel

_TRANSFORMER, _POOLING, _NORMALIZE = "Transformer", "Pooling", "Normalize"
# sentence-transformers < 6 saved pooling as one flag per mode; 6 saves "pooling_mode".
_LEGACY_POOLING = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
_BERT_TOKENIZERS = ("BertTokenizer", "BertTokenizerFast")
BATCH_TOKENS = 512  # padded tokens per batch (see _batches)
MAX_WORKERS = 8


@dataclass(frozen=True)
class BertLayout:
    """What ``read_layout`` found in a sentence-transformers folder."""

    folder: Path  # the Transformer module's: config.json, model.safetensors, tokenizer.json
    pooling: str  # "mean" or "cls"
    normalize: bool  # a Normalize module follows the pooling
    max_seq_length: int  # tokens per text, [CLS] and [SEP] included; the rest is cut


def read_layout(folder: Path) -> BertLayout | None:
    """The layout of the sentence-transformers model in ``folder`` when this module can run
    it, else ``None`` (another architecture or pooling, relative positions, lowercasing done
    by sentence-transformers, a file missing)."""
    try:
        modules = _read_json(folder / "modules.json")
        kinds = [module["type"].rsplit(".", 1)[-1] for module in modules]
        if kinds not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]):
            return None
        model = folder / modules[0].get("path", "")
        pooling = _pooling_mode(_read_json(folder / modules[1]["path"] / "config.json"))
        config = _read_json(model / "config.json")
        sbert = _read_json(model / "sentence_bert_config.json", optional=True)
        tokenizer_config = _read_json(model / "tokenizer_config.json", optional=True)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None
    runnable = (
        config.get("model_type") == "bert"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and config.get("hidden_act") == "gelu"
        and pooling in ("mean", "cls")
        and not sbert.get("do_lower_case")
        and sbert.get("transformer_task", "feature-extraction") == "feature-extraction"
        and (model / "model.safetensors").is_file()
        and (model / "tokenizer.json").is_file()
    )
    if not runnable or pooling is None:  # None is not runnable: said again for the type
        return None
    positions = int(config["max_position_embeddings"])
    # sentence-transformers < 6 kept the length in sentence_bert_config.json, 6 keeps it as
    # the tokenizer's model_max_length; either way it never exceeds the position table.
    longest = sbert.get("max_seq_length") or tokenizer_config.get("model_max_length") or positions
    return BertLayout(model, pooling, kinds[-1] == _NORMALIZE, min(int(longest), positions))


def _read_json(path: Path, optional: bool = False) -> Any:
    """A JSON file's content; an ``optional`` one that is absent reads as empty."""
    if optional and not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def _pooling_mode(config: dict[str, Any]) -> str | None:
    mode = config.get("pooling_mode")
    if mode is None:
        modes = [name for key, name in _LEGACY_POOLING.items() if config.get(key)]
        mode = modes[0] if len(modes) == 1 else None
    return mode if isinstance(mode, str) else None


# erf by Abramowitz and Stegun, Handbook of Mathematical Functions (1964), formula 7.1.26:
# erf(x) = 1 - (a1 t + a2 t^2 + a3 t^3 + a4 t^4 + a5 t^5) exp(-x^2), t = 1 / (1 + p x), x >= 0,
# with an absolute error of at most 1.5e-7, below float32's own rounding of GELU's output.
_P = np.float32(0.3275911)
_A = [np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)]
_ONE, _HALF, _SQRT_HALF = np.float32(1), np.float32(0.5), np.float32(1 / math.sqrt(2))


def gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x/2 * (1 + erf(x / sqrt 2)), in a new array; every step works in
    place, since on these arrays numpy's time goes to passes over memory."""
    z = np.abs(x)
    z *= _SQRT_HALF
    t = z * _P
    t += _ONE
    np.reciprocal(t, out=t)
    poly = t * _A[0]  # Horner's rule from a5 down to a1
    for a in _A[1:]:
        poly += a
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z
    np.subtract(_ONE, poly, out=poly)  # erf(|x| / sqrt 2)
    np.copysign(poly, x, out=poly)
    poly += _ONE
    poly *= x
    poly *= _HALF
    return poly


@dataclass(frozen=True)
class _Layer:
    qkv: np.ndarray  # (hidden, 3 * hidden): query (pre-scaled), key and value in one product
    qkv_bias: np.ndarray
    attention_out: np.ndarray
    attention_out_bias: np.ndarray
    attention_norm: tuple[np.ndarray, np.ndarray]
    up: np.ndarray
    up_bias: np.ndarray
    down: np.ndarray
    down_bias: np.ndarray
    norm: tuple[np.ndarray, np.ndarray]


@dataclass
class BertEncoder:
    """A loaded model; ``encode`` takes the arguments ``embed`` passes to a
    ``SentenceTransformer``, so either serves the embedding stage."""

    layout: BertLayout
    tokenizer: Any  # tokenizers.Tokenizer
    words: np.ndarray
    positions: np.ndarray
    token_type: np.ndarray  # the type-0 row: every text is a single segment
    embedding_norm: tuple[np.ndarray, np.ndarray]
    layers: list[_Layer]
    heads: int
    eps: float

    @classmethod
    def load(cls, layout: BertLayout) -> BertEncoder:
        from safetensors.numpy import load_file

        config = json.loads((layout.folder / "config.json").read_text(encoding="utf-8"))
        raw = load_file(layout.folder / "model.safetensors")
        # Saved from BertForMaskedLM and kin, the encoder's weights sit under "bert.".
        weights = {name.removeprefix("bert."): value for name, value in raw.items()}
        heads = int(config["num_attention_heads"])
        # Attention scores are divided by sqrt(head size): done once, to the query weights.
        scale = np.float32(1 / math.sqrt(int(config["hidden_size"]) // heads))

        def linear(name: str, factor: np.float32 = _ONE) -> tuple[np.ndarray, np.ndarray]:
            weight, bias = weights[f"{name}.weight"], weights[f"{name}.bias"]
            return np.ascontiguousarray(weight.T) * factor, bias * factor

        def norm(name: str) -> tuple[np.ndarray, np.ndarray]:
            return weights[f"{name}.weight"], weights[f"{name}.bias"]

        layers = []
        for index in range(int(config["num_hidden_layers"])):
            at = f"encoder.layer.{index}.attention"
            parts = [linear(f"{at}.self.query", scale)]
            parts += [linear(f"{at}.self.{part}") for part in ("key", "value")]
            at = f"encoder.layer.{index}"
            layers.append(
                _Layer(
                    np.concatenate([weight for weight, _ in parts], axis=1),
                    np.concatenate([bias for _, bias in parts]),
                    *linear(f"{at}.attention.output.dense"),
                    norm(f"{at}.attention.output.LayerNorm"),
                    *linear(f"{at}.intermediate.dense"),
                    *linear(f"{at}.output.dense"),
                    norm(f"{at}.output.LayerNorm"),
                )
            )
        return cls(
            layout=layout,
            tokenizer=_tokenizer(layout),
            words=weights["embeddings.word_embeddings.weight"],
            positions=weights["embeddings.position_embeddings.weight"],
            token_type=weights["embeddings.token_type_embeddings.weight"][0],
            embedding_norm=norm("embeddings.LayerNorm"),
            layers=layers,
            heads=heads,
            eps=float(config.get("layer_norm_eps", 1e-12)),
        )

    def encode(
        self, texts: Sequence[str], batch_size: int = 32, normalize_embeddings: bool = False
    ) -> np.ndarray:
        """One float32 vector per text, as the folder's modules make it (unit length when
        they end in Normalize, or with ``normalize_embeddings``).

        Texts are sorted by length into batches (``_batches``), so a batch pads little, and
        the batches run on one thread per core with BLAS held to one thread: numpy's
        element-wise steps (GELU, softmax, LayerNorm) then use every core too, and
        OpenBLAS's own threads, which spin while they wait, cannot slow the attention's many
        small products to a crawl when another process is busy (64 s instead of 4.4 s for
        25 texts of 256 tokens, on 2 cores shared with one busy process)."""
        from threadpoolctl import threadpool_limits

        encodings = self.tokenizer.encode_batch_fast(list(texts))
        lengths = [len(encoding.ids) for encoding in encodings]
        vectors = np.empty((len(texts), self.words.shape[1]), dtype=np.float32)

        def run(batch: list[int]) -> None:
            ids = np.zeros((len(batch), max(lengths[index] for index in batch)), dtype=np.int64)
            mask = np.zeros(ids.shape, dtype=np.float32)
            for row, index in enumerate(batch):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            vectors[batch] = self._pool(self.forward(ids, mask), mask)

        workers = min(_cores(), MAX_WORKERS)
        batches = _batches(lengths, batch_size)
        with threadpool_limits(1, "blas"), ThreadPoolExecutor(workers) as pool:
            # Each batch runs in a copy of this thread's context: the stop flag goes along.
            done = [pool.submit(contextvars.copy_context().run, run, b) for b in batches]
            try:
                for future in done:
                    future.result()
            finally:
                for future in done:
                    future.cancel()
        if self.layout.normalize or normalize_embeddings:
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The last hidden states (batch, tokens, hidden) of padded ``ids``; a stopped
        question ends this between layers and between a layer's two halves.

        Hidden states are kept as one (batch * tokens, hidden) matrix, so that every linear
        layer is one matrix product rather than one per text, numpy's way with a 3-d array
        (10 to 25% slower, measured on one core)."""
        batch, length = ids.shape
        hidden = self.words[ids] + self.positions[:length] + self.token_type
        hidden = self._norm(hidden.reshape(batch * length, -1), self.embedding_norm)
        # Padding takes no attention: a large negative score gives it a weight of 0.
        blocked = None
        if not mask.all():
            blocked = ((1 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for layer in self.layers:
            cancel.check()
            attended = self._attention(hidden, batch, layer, blocked)
            attended += hidden
            hidden = self._norm(attended, layer.attention_norm)
            cancel.check()
            inner = hidden @ layer.up
            inner += layer.up_bias
            out = gelu(inner) @ layer.down
            out += layer.down_bias
            out += hidden
            hidden = self._norm(out, layer.norm)
        return hidden.reshape(batch, length, -1)

    def _attention(
        self, hidden: np.ndarray, batch: int, layer: _Layer, blocked: np.ndarray | None
    ) -> np.ndarray:
        width = hidden.shape[1]
        qkv = hidden @ layer.qkv
        qkv += layer.qkv_bias
        qkv = qkv.reshape(batch, -1, 3, self.heads, width // self.heads)
        query, key, value = qkv.transpose(2, 0, 3, 1, 4)  # each (batch, heads, tokens, size)
        scores = query @ key.transpose(0, 1, 3, 2)
        if blocked is not None:
            scores += blocked
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        # Softmax's division, done to the (smaller) weighted sum of values instead.
        context = scores @ value
        context /= scores.sum(axis=-1, keepdims=True)
        attended = context.transpose(0, 2, 1, 3).reshape(hidden.shape) @ layer.attention_out
        attended += layer.attention_out_bias
        return attended

    def _norm(self, x: np.ndarray, weights: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        """LayerNorm over the last axis, in place on ``x`` (always a fresh sum here)."""
        x -= x.mean(axis=-1, keepdims=True)
        x /= np.sqrt(np.mean(np.square(x), axis=-1, keepdims=True) + np.float32(self.eps))
        x *= weights[0]
        x += weights[1]
        return x

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if self.layout.pooling == "cls":
            return hidden[:, 0]
        summed = np.einsum("btd,bt->bd", hidden, mask)
        return summed / np.maximum(mask.sum(axis=1, keepdims=True), 1e-9)


def _cores() -> int:
    """The cores this process may run on (all of them where the OS cannot say)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _batches(lengths: Sequence[int], most: int) -> list[list[int]]:
    """Indices of texts, longest first, cut into batches of at most ``most`` texts and
    ``BATCH_TOKENS`` tokens of padded input (or one text). Sorted, a batch pads little;
    longest first, the workers end on short batches and so finish together; small, a batch
    is as fast per token as a large one on a CPU, and quicker to stop."""
    batches: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__, reverse=True):
        batch = batches[-1] if batches else []
        if batch and len(batch) < most and (len(batch) + 1) * lengths[batch[0]] <= BATCH_TOKENS:
            batch.append(index)
        else:
            batches.append([index])
    return batches


def _tokenizer(layout: BertLayout) -> Any:
    """tokenizer.json, cut to ``max_seq_length``. A folder whose tokenizer_config names a
    BERT tokenizer gets that config's normalizer, as transformers builds it (its lowercasing
    and accent flags win over tokenizer.json's)."""
    from tokenizers import Tokenizer, normalizers

    tokenizer = Tokenizer.from_file(str(layout.folder / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=layout.max_seq_length)
    config = _read_json(layout.folder / "tokenizer_config.json", optional=True)
    if config.get("tokenizer_class") in _BERT_TOKENIZERS:
        tokenizer.normalizer = normalizers.BertNormalizer(
            clean_text=True,
            handle_chinese_chars=config.get("tokenize_chinese_chars", True),
            strip_accents=config.get("strip_accents"),
            lowercase=config.get("do_lower_case", True),
        )
    return tokenizer
