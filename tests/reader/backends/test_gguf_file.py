"""The GGUF backend (``reader/backends/gguf_file.py``): the file it finds, loading nothing (a
GGUF file named by path or as a file of a hub repo that ``models pull`` fetched, in a
Hugging Face cache laid out as huggingface_hub lays it out, or the models folder's largest),
what ``--reader auto`` plans from each, and its ``gpu_layers`` setting reaching llama.cpp
and ``models``."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.assembly.inventory import take_inventory
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.reader.backends.gguf_file import MODELS_ENV, GGUFFile, models_folder
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat, gpu_offload
from htmlrag_chat.reader.registry import look_around, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings
from tests.reader.building import build_reader
from tests.smollm2 import smollm2_gguf

REPO, FILE = "someone/tiny-GGUF", "tiny-Q4_K_M.gguf"


def on_disk(model: str | None, cache: Path) -> str | None:
    """The GGUF file the backend finds for ``model``."""
    return GGUFFile().look(ReaderSettings(model=model), cache)


COMMIT = "0123456789abcdef0123456789abcdef01234567"


def pulled(cache: Path) -> Path:
    """``models pull someone/tiny-GGUF/tiny-Q4_K_M.gguf`` as huggingface_hub leaves it."""
    repo = cache / f"models--{REPO.replace('/', '--')}"
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    blob = repo / "blobs" / "abc123"
    blob.parent.mkdir()
    blob.write_bytes(b"GGUF")
    (repo / "snapshots" / COMMIT / FILE).symlink_to(blob)
    return repo / "snapshots" / COMMIT / FILE


def test_a_pulled_gguf_of_a_hub_repo_is_found_by_its_hub_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    name = f"{REPO}/{FILE}"
    assert on_disk(name, tmp_path) is None
    settings = ReaderSettings(model=name, probe_ports=())
    plan = plan_reader(settings, look_around(settings, tmp_path))
    assert plan.problem == f"{name} is not downloaded: htmlrag-chat models pull {name}"
    path = pulled(tmp_path)
    assert on_disk(name, tmp_path) == str(path)
    plan = plan_reader(settings, look_around(settings, tmp_path))
    assert (plan.backend.name, plan.model, plan.problem) == ("gguf", str(path), None)
    # A path is itself, wherever it is; a missing one is named as missing.
    assert on_disk(str(path), tmp_path) == str(path)
    settings = ReaderSettings(model=str(tmp_path / "gone.gguf"), probe_ports=())
    missing = plan_reader(settings, look_around(settings, tmp_path))
    assert missing.problem == f"{tmp_path / 'gone.gguf'}: no such GGUF file"


def test_auto_finds_the_largest_gguf_in_the_models_folder(tmp_path: Path, monkeypatch) -> None:
    """Where ``make reader-models`` puts Qwen2.5: found after the pulled default quant,
    never in place of a model the settings name."""
    folder = tmp_path / "models"
    monkeypatch.setenv(MODELS_ENV, str(folder))
    hub = tmp_path / "hub"
    assert models_folder() == folder and on_disk(None, hub) is None  # no folder yet
    folder.mkdir()
    (folder / "small.gguf").write_bytes(b"GGUF" + bytes(10))
    (folder / "big.GGUF").write_bytes(b"GGUF" + bytes(100))
    (folder / "notes.txt").write_bytes(bytes(1000))
    assert on_disk(None, hub) == str(folder / "big.GGUF")
    assert on_disk("owner/other-model", hub) is None
    plan = plan_reader(ReaderSettings(), Surroundings(None, (), {"gguf": str(on_disk(None, hub))}))
    assert (plan.backend.name, plan.model) == ("gguf", str(folder / "big.GGUF"))


def test_gpu_layers_reach_llama_cpp_and_models_names_where_it_runs(hf_cache: Path) -> None:
    """Every layer offloaded by default (-1), none with --gpu-layers 0; ``models`` says
    llama.cpp's device, the GPU only where this build offloads (this one: CPU only)."""
    gguf = str(smollm2_gguf())
    for layers in (-1, 0):
        given = {"gpu_layers": layers}
        settings = ReaderSettings(reader="local", model=gguf, probe_ports=(), options=given)
        reader = build_reader(settings, lambda event: None)
        assert isinstance(reader.chat, LlamaCppChat) and reader.chat.gpu_layers == layers
        assert reader.chat.on_gpu == (layers != 0 and gpu_offload())
        row = take_inventory(AgentOptions(reader=settings), hf_cache).row("reader")
        assert row.device == ("gpu" if reader.chat.on_gpu else "cpu")
        assert row.note.startswith("llama.cpp")
    assert ReaderSettings().option("gpu_layers") == -1  # declared by the GGUF backend
