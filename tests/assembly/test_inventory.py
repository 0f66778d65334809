"""Where each role's model is, without loading any: real folders, a Hugging Face cache laid
out as huggingface_hub lays it out (blobs and snapshot links), a scripted server on
loopback for the reader, and the device worked out without torch."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from htmlrag_chat.assembly.inventory import Inventory, take_inventory
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.settings import ReaderSettings
from tests.openai_server import ScriptedLLM, serve_llm

ROOT = Path(__file__).resolve().parents[2]
COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def cache_repo(cache: Path, repo_id: str, files: dict[str, bytes]) -> Path:
    """``files`` of ``repo_id`` in ``cache`` as a download leaves them; the snapshot."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for name, data in files.items():
        blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / name).symlink_to(blob)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return snapshot


def folder_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def inventory(cache: Path, tokenizer: str | None = None, **reader: object) -> Inventory:
    settings = ReaderSettings(**({"probe_ports": ()} | reader))  # type: ignore[arg-type]
    options = AgentOptions(
        reader=settings, prune=PruneSettings(gen_model="org/pruner", tokenizer=tokenizer)
    )
    return take_inventory(options, cache_dir=cache)


def test_a_cached_model_is_present_with_its_size_and_a_partial_one_is_not(
    tmp_path: Path, tiny_lm_dir: Path
) -> None:
    files = folder_files(tiny_lm_dir)
    snapshot = cache_repo(tmp_path, "org/pruner", files)
    reader_files = {k: v for k, v in files.items() if not k.endswith(".safetensors")}
    cache_repo(tmp_path, "meta-llama/Llama-3.1-8B-Instruct", reader_files)
    found = inventory(tmp_path, model="meta-llama/Llama-3.1-8B-Instruct")
    pruner, reader, tokenizer = found.row("pruner"), found.row("reader"), found.row("tokenizer")
    assert (pruner.where, pruner.location, pruner.present) == ("hf-cache", str(snapshot), True)
    assert pruner.size_bytes == sum(len(data) for data in files.values())  # the blobs' sizes
    assert pruner.note == "" and pruner.device
    # The reader's weights never arrived (an interrupted download): its tokenizer did.
    assert (reader.where, reader.present) == ("hf-cache", False)
    assert reader.note == "incomplete: no weights in the cache"
    assert reader.size_bytes == sum(len(data) for data in reader_files.values())
    assert (tokenizer.model, tokenizer.where, tokenizer.present) == (reader.model, "hf-cache", True)


def test_a_local_reader_folder_is_also_the_tokenizer(tmp_path: Path, tiny_lm_dir: Path) -> None:
    found = inventory(tmp_path, reader="local", model=str(tiny_lm_dir), device="cpu")
    reader, tokenizer = found.row("reader"), found.row("tokenizer")
    assert (reader.where, reader.present, reader.device) == ("folder", True, "cpu")
    assert reader.size_bytes == sum(p.stat().st_size for p in tiny_lm_dir.iterdir())
    assert (tokenizer.model, tokenizer.note) == (str(tiny_lm_dir), "the reader's own")
    missing = inventory(tmp_path, reader="local", model=str(tmp_path / "nothing")).row("reader")
    assert (missing.where, missing.present, missing.note) == ("nowhere", False, "")
    approx = inventory(tmp_path, tokenizer="approx").row("tokenizer")
    assert (approx.where, approx.present) == ("built-in", True)


def test_the_reader_row_names_the_server_that_would_answer(tmp_path: Path) -> None:
    llm = ScriptedLLM(lambda messages: "", model="llama3.1:8b", also_listed=["nomic-embed-text"])

    async def scenario() -> tuple[str, Inventory, Inventory]:
        async with serve_llm(llm) as url:
            port = int(url.rsplit(":", 1)[1].removesuffix("/v1"))
            found = await asyncio.to_thread(inventory, tmp_path, probe_ports=(port,))
            configured = await asyncio.to_thread(
                inventory, tmp_path, base_url=url, model="qwen2.5:7b"
            )
            return url, found, configured

    url, found, configured = asyncio.run(scenario())
    reader = found.row("reader")
    assert (reader.model, reader.where, reader.location, reader.present) == (
        "llama3.1:8b", "server", url, True,
    )  # fmt: skip
    assert reader.device is None and reader.note.startswith("found: the server at 127.0.0.1:")
    assert [server.models for server in found.servers] == [("llama3.1:8b", "nomic-embed-text")]
    assert json.loads(json.dumps(found.to_json()))["servers"][0]["base_url"] == url
    # A configured model the server does not list, then the server gone.
    row = configured.row("reader")
    assert (row.model, row.present, row.note) == (
        "qwen2.5:7b",
        False,
        "the server lists no such model",
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        gone = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    nothing = inventory(tmp_path, base_url=gone)
    row = nothing.row("reader")
    assert (row.where, row.present) == ("server", False)
    assert row.note.startswith(f"nothing answers at {urlsplit(gone).netloc} (")
    assert nothing.servers == []  # no server to name


def test_the_device_is_the_one_torch_picks_without_importing_torch() -> None:
    code = (
        "import sys; from htmlrag_chat.assembly.inventory import guess_device; "
        "print(guess_device('auto')[0], 'torch' in sys.modules)"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    from htmlrag_chat.modelio.device import pick_device

    assert done.stdout.split() == [pick_device(), "False"]
