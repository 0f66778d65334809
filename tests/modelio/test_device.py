"""Picking the device (torch is asked only where it could answer something but "cpu"), and
what a model on it needs set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.modelio.device import gpu_possible, prepare_attention

ROOT = Path(__file__).resolve().parents[2]


def test_auto_is_the_device_torch_picks_and_imports_torch_only_where_a_gpu_can_be():
    code = (
        "import sys; from htmlrag_chat.modelio.device import gpu_possible, pick_device; "
        "print(pick_device(), pick_device('auto'), gpu_possible(), 'torch' in sys.modules)"
    )
    env = os.environ | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    device, auto, possible, imported = done.stdout.split()
    import torch

    expected = "cuda" if torch.cuda.is_available() else "cpu"
    if torch.backends.mps.is_available():
        expected = "mps"
    assert device == auto == expected
    assert imported == possible  # no GPU driver here: "cpu" without importing torch


def test_no_gpu_without_a_drivers_files(monkeypatch):
    # An empty root stands for a Linux machine without GPU drivers.
    monkeypatch.setattr(sys, "platform", "linux")
    assert not gpu_possible(Path("/nonexistent-root"))


def test_windows_is_judged_by_nvidia_smi_and_macos_always_asks_torch(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("PATHEXT", ".exe")  # what shutil.which looks for on Windows
    assert not gpu_possible()
    smi = tmp_path / "nvidia-smi.exe"
    smi.write_text("")
    smi.chmod(0o755)
    assert gpu_possible()
    monkeypatch.setattr(sys, "platform", "darwin")
    assert gpu_possible(Path("/nonexistent-root"))


@pytest.mark.parametrize("marker", ["dev/nvidiactl", "proc/driver/nvidia", "dev/dxg", "dev/kfd"])
def test_a_gpu_drivers_file_means_torch_is_asked(tmp_path, marker):
    (tmp_path / marker).parent.mkdir(parents=True)
    (tmp_path / marker).touch()
    assert gpu_possible(tmp_path)


@pytest.mark.parametrize("device", ["cuda", "cuda:1"])
def test_models_on_cuda_attend_without_cudnn_whose_graphs_are_built_per_shape(device):
    import torch

    before = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        prepare_attention("cpu")
        prepare_attention("mps")
        assert torch.backends.cuda.cudnn_sdp_enabled()
        prepare_attention(device)
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)
