"""Where models run: CUDA when present, then Apple's MPS, then the CPU.

Half precision only on a GPU: on CPUs it is slower than float32 and loses accuracy. A device
asked for by name is checked before any model is moved there, so ``--device cuda`` on a
CPU-only build of torch is a one-line usage error rather than torch's assertion.

torch is imported only when its answer could be a GPU: importing it takes two seconds of a
cold question on a small CPU, and a machine without GPU drivers (``gpu_possible``) can only
answer "cpu", where the embedding stage runs without torch (``scoring.bert``); nor can a
core install, which has no torch at all.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.modelio.extras import install_line

if TYPE_CHECKING:
    import torch

_NAMED = re.compile(r"(cpu|cuda|mps)(?::(\d+))?")
CHOICES = "auto, cpu, cuda, cuda:N or mps"
# What a GPU's driver leaves in the file system: NVIDIA's (Linux), WSL2's GPU bridge, ROCm's.
_GPU_MARKERS = ("dev/nvidiactl", "proc/driver/nvidia", "dev/dxg", "dev/kfd")


class DeviceUnavailable(UserError):
    """A device that is not a device name, or that this machine or torch build lacks."""


def pick_device(requested: str | None = None) -> str:
    """``requested`` when given (``cpu``, ``cuda``, ``cuda:1``, ``mps``) and usable here,
    else the best found; ``DeviceUnavailable`` says why a requested one cannot be used."""
    if requested and requested != "auto":
        check_device(requested)
        return requested
    if not gpu_possible() or not torch_installed():
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def torch_installed() -> bool:
    """Whether torch is installed (the core install runs on the CPU without it)."""
    return importlib.util.find_spec("torch") is not None


def gpu_possible(root: Path = Path("/")) -> bool:
    """Whether torch could find a GPU here: always on macOS (MPS), on Windows where NVIDIA's
    driver installed ``nvidia-smi``, elsewhere only with a GPU driver's files under ``root``."""
    if sys.platform == "darwin":
        return True
    if sys.platform == "win32":
        return shutil.which("nvidia-smi") is not None
    return any((root / marker).exists() for marker in _GPU_MARKERS)


def check_device(name: str) -> None:
    match = _NAMED.fullmatch(name)
    if match is None or (match[1] != "cuda" and match[2] is not None):
        raise DeviceUnavailable(f"device {name!r} is not one of {CHOICES}")
    kind, index = match[1], int(match[2] or 0)
    if kind == "cpu":
        return
    if not torch_installed():
        raise DeviceUnavailable(
            f"device {name!r}: torch is not installed (the core install leaves it out); "
            f"install torch for your GPU (https://pytorch.org), then {install_line('gpu')}"
        )
    import torch

    if kind == "cuda" and not torch.cuda.is_available():
        why = (
            f"this torch ({torch.__version__}) is a CPU-only build"
            if torch.version.cuda is None
            else "no CUDA GPU is visible"
        )
        raise DeviceUnavailable(f"device {name!r}: {why}; use --device cpu or auto")
    if kind == "cuda" and index >= torch.cuda.device_count():
        raise DeviceUnavailable(
            f"device {name!r}: there is no CUDA GPU {index} "
            f"({torch.cuda.device_count()} visible); use --device cuda:0 or auto"
        )
    if kind == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailable(
            f"device {name!r}: Apple's MPS is not available here (Apple silicon with macOS "
            "only); use --device cpu or auto"
        )


def model_dtype(device: str) -> torch.dtype:
    """bfloat16 on a GPU, float32 on the CPU."""
    import torch

    return torch.float32 if device == "cpu" else torch.bfloat16


def prepare_attention(device: str) -> None:
    """Attention without cuDNN's kernels once a model runs on CUDA (torch's flash and
    memory-efficient kernels instead), for the whole process.

    torch keeps the graphs it builds for cuDNN's attention in a cache of each thread, keyed
    by shape, and each step of decoding attends to one key more than the step before: every
    step of an answer built a new graph. On an H100 (issue 29, 8B shape, a prompt of 4,821
    tokens) decoding took 108.8 ms a token in a fresh thread (the reader's) against 35.4 ms
    for the same steps repeated in one thread, with the same GPU time; plain ``generate`` in
    a fresh process took 73 ms a token. The flash kernels need no setup per shape. A torch
    too old to have cuDNN's attention has nothing to turn off."""
    if device.startswith("cuda"):
        import torch

        turn = getattr(torch.backends.cuda, "enable_cudnn_sdp", None)
        if turn is not None:
            turn(False)
