"""The transformers backend (``reader/backends/transformers_model.py``): ``auto`` reads a
model only when it is complete here, and a model the user named that it cannot read is a
problem saying why (never a download); a pull is offered on a GPU machine only."""

from __future__ import annotations

from pathlib import Path

from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.registry import look_around, plan_reader, reader_row
from htmlrag_chat.reader.settings import ReaderSettings


def problem(model: str) -> str | None:
    return plan_reader(ReaderSettings(model=model), Surroundings(None, ())).problem


def test_a_named_model_auto_cannot_read_says_why(tmp_path: Path, hf_cache: Path) -> None:
    assert problem(str(tmp_path)) == (
        f"--model {tmp_path}: no complete model in that folder (config.json and weights); "
        "for LLM answers, start Ollama, LM Studio, llama.cpp's server or vLLM (found on their "
        "default ports), or download a model: htmlrag-chat models pull reader"
    )
    assert "no such model folder or GGUF file" in str(problem(str(tmp_path / "gone")))
    assert "it is not downloaded (auto never downloads)" in str(problem("owner/model"))
    assert "no server found on 127.0.0.1 lists it" in str(problem("llama3.1:8b"))


def test_a_complete_folder_is_found_and_read_in_this_process(tiny_lm_dir: Path) -> None:
    settings = ReaderSettings(model=str(tiny_lm_dir), probe_ports=())
    plan = plan_reader(settings, look_around(settings))
    assert (plan.backend.name, plan.model, plan.problem) == ("transformers", str(tiny_lm_dir), None)
    assert plan.label == f"{tiny_lm_dir.name} (transformers)"


def test_a_pull_is_offered_on_a_gpu_machine_only(hf_cache: Path) -> None:
    nothing = ReaderSettings(probe_ports=())
    plan = plan_reader(nothing, Surroundings(None, ()))
    assert plan.backend.name == "extractive"
    on_gpu = reader_row(plan, "cuda", hf_cache)
    assert (on_gpu.model, on_gpu.present) == (DEFAULT_READER_MODEL, False)
    assert on_gpu.note.startswith("answers are extractive until it is here")
    assert reader_row(plan, "cpu", hf_cache).model != DEFAULT_READER_MODEL  # the GGUF quant
