"""What the benchmarks share: timing and summaries, and the repository on the import path
(for the tiny models the tests build)."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def machine(device: str) -> str:
    """The machine line of a report that runs models: CPU, Python, torch and device (with
    the GPU's name on CUDA)."""
    import os
    import platform

    import torch

    if device.startswith("cuda"):
        device = f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return (
        f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"torch {torch.__version__}, device {device}"
    )


def write_report(path: Path, report: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


def quantiles(values: list[float]) -> dict[str, float]:
    """Median, p95 and mean, rounded for reports."""
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2),
        "mean": round(statistics.fmean(ordered), 2),
    }


def timed(function: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """A call's result and its wall time in ms (waiting for the GPU when torch uses one)."""
    torch = sys.modules.get("torch")
    synchronize = torch is not None and torch.cuda.is_available()
    if synchronize:
        torch.cuda.synchronize()
    start = time.perf_counter()
    value = function(*args)
    if synchronize:
        torch.cuda.synchronize()
    return value, (time.perf_counter() - start) * 1000


def argument_parser(doc: str, result_name: str) -> argparse.ArgumentParser:
    """Options every benchmark takes: the corpus, the tokenizer and where results go."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument(
        "--tokenizer", default=str(ROOT.parent / "shared" / "tokenizers" / "llama3")
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / result_name)
    return parser


def real_tokenizer(spec: str) -> Any:
    """The tokenizer budgets are counted in; benchmarks refuse the approximation."""
    from htmlrag_chat.pruning.tokens import load_token_counter

    loaded = load_token_counter(spec)
    if loaded.notice:
        raise SystemExit(f"error: the benchmark needs the real tokenizer: {loaded.notice}")
    return loaded.counter


LLAMA_8B = {
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
}
LLAMA_1B = {  # Llama-3.2-1B, the shape of HtmlRAG's released 1B pruner: tied embeddings
    "hidden_size": 2048,
    "intermediate_size": 8192,
    "num_hidden_layers": 16,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "tie_word_embeddings": True,
}
SHAPES = {"8b": LLAMA_8B, "1b": LLAMA_1B}


def build_model(folder: Path, tokenizer: str, shape: str) -> str:
    """A random-weight Llama of ``shape`` saved with the Llama-3 tokenizer and chat format:
    ``tiny`` (hidden size 64, two layers), ``1b`` (the Llama-3.2-1B shape) or ``8b`` (the
    Llama-3.1-8B shape); the last two in bfloat16, built on the GPU (CUDA only)."""
    import torch
    from transformers import AutoTokenizer

    from tests.tiny_models import CHAT_TEMPLATE, make_tiny_lm

    if shape == "tiny":
        make_tiny_lm(folder, tokenizer, max_positions=32768)
    else:
        from transformers import LlamaConfig, LlamaForCausalLM

        loaded = AutoTokenizer.from_pretrained(tokenizer)
        config = LlamaConfig(
            vocab_size=len(loaded),
            bos_token_id=loaded.bos_token_id,
            eos_token_id=loaded.eos_token_id,
            **SHAPES[shape],
        )
        torch.set_default_dtype(torch.bfloat16)
        with torch.device("cuda"):
            LlamaForCausalLM(config).save_pretrained(folder)
        torch.set_default_dtype(torch.float32)
        torch.cuda.empty_cache()
        loaded.save_pretrained(folder)
    loaded = AutoTokenizer.from_pretrained(folder)
    loaded.chat_template = CHAT_TEMPLATE  # the Llama-3 instruct format, in its own tokens
    loaded.save_pretrained(folder)
    return str(folder)
