"""Where models run: CUDA when present, then Apple's MPS, then the CPU.

Half precision only on a GPU: on CPUs it is slower than float32 and loses accuracy.
"""

from __future__ import annotations

import torch


def pick_device(requested: str | None = None) -> str:
    """``requested`` when given (``cpu``, ``cuda``, ``cuda:1``, ``mps``), else the best found."""
    if requested and requested != "auto":
        return requested
    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def model_dtype(device: str, half: torch.dtype = torch.bfloat16) -> torch.dtype:
    """``half`` on a GPU, float32 on the CPU."""
    return torch.float32 if device == "cpu" else half
