"""A model as ``htmlrag-chat models`` lists it: where it is, whether it is here, its size.

Nothing is loaded: every answer comes from the file system (a folder, the Hugging Face cache
through ``try_to_load_from_cache``) or from the settings. Each reader backend says its own
row (``reader/backend.py``), and ``assembly/inventory.py`` the pruning models' and the tokenizer's,
so both build rows here, below the readers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from htmlrag_chat.base.paths import expand_user
from htmlrag_chat.modelio.extras import install_line, missing_module
from htmlrag_chat.modelio.hub import cached_snapshot, complete_model, hub_endpoint


@dataclass(frozen=True)
class ModelRow:
    role: str  # reader, pruner, embedding or tokenizer
    model: str  # as configured: hub id, folder, a server's model name, or "extractive"
    where: str  # folder, hf-cache, bundled, server, built-in, gguf, hub (not here yet), nowhere
    location: str | None  # the folder, cache snapshot, server URL or hub page
    present: bool
    size_bytes: int | None
    device: str | None  # None: not run here (a server, the extractive reader)
    note: str = ""
    used: bool = True  # False: the settings leave it out (--pruner bm25 needs no model)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Located:
    where: str
    location: str | None
    present: bool
    size_bytes: int | None

    def row(self, role: str, model: str, device: str | None, note: str = "") -> ModelRow:
        return ModelRow(
            role, model, self.where, self.location, self.present, self.size_bytes, device, note
        )


def locate(name: str, complete: Callable[[Path], bool], cache_dir: Path | None = None) -> Located:
    """Where ``name`` resolves, as ``hub.load_pretrained`` looks: a folder, then the cache,
    then the hub (where a download would come from)."""
    path = expand_user(name)
    if path.is_dir():
        return Located("folder", str(path), complete(path), folder_bytes(path))
    snapshot = cached_snapshot(name, cache_dir)
    if snapshot is not None:
        return Located("hf-cache", str(snapshot), complete(snapshot), folder_bytes(snapshot))
    if name.count("/") == 1 and not path.is_absolute() and not name.startswith("."):
        return Located("hub", f"{hub_endpoint()}/{name}", False, None)
    return Located("nowhere", None, False, None)  # a path that does not exist


def model_row(
    role: str, name: str, device: str, cache_dir: Path | None, note: str = "", missing: str = ""
) -> ModelRow:
    """A model's row: ``note`` always, ``missing`` when it is not here."""
    found = locate(name, complete_model, cache_dir)
    if found.where == "hf-cache" and not found.present:
        missing = "incomplete: no weights in the cache"
    return found.row(role, name, device, note or ("" if found.present else missing))


def with_extra(row: ModelRow, extra: str) -> ModelRow:
    """``row`` with a note when the extra that runs its model is not installed (the core
    install has none: the model may be on disk and still unusable)."""
    module = missing_module(extra)
    if module is None or not row.used:
        return row
    needs = f"{module} is not installed: {install_line(extra)}"
    return replace(row, note=f"{row.note}; {needs}" if row.note else needs)


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (a cache snapshot's links count their blobs)."""
    return sum(file.stat().st_size for file in folder.rglob("*") if file.is_file())
