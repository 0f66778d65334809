"""One reader plan: for every case, ``ask`` (``wiring.build_reader``), ``models``
(``inventory.reader_row``), ``config`` (its "answers with" line) and the palette's ``auto``
entry (``tui.readers``) name the same reader, because all four ask
``reader.choice.plan_reader``. Real servers on loopback
(scripted), a real GGUF file, a real transformers folder, an empty Hugging Face cache."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.config import ReaderSettings
from htmlrag_chat.events import Notice
from htmlrag_chat.hub import ModelUnavailable
from htmlrag_chat.inventory import reader_row
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.choice import (
    MODELS_ENV,
    OnDisk,
    Surroundings,
    look_around,
    models_folder,
    on_disk,
    plan_reader,
)
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.gguf import GGUFChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.local import LocalChat
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.tui.readers import reader_choices
from htmlrag_chat.wiring import BUDGET, CPU_BUDGET, build_reader, default_budget
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.smollm2 import smollm2_gguf

SERVED = "llama-3.1-8b-instruct"


def built(settings: ReaderSettings) -> tuple[str, str]:
    """What ``ask`` reads with: (kind, model)."""
    notices: list[object] = []
    reader = build_reader(settings, notices.append)
    if isinstance(reader, ExtractiveReader):
        return "extractive", "extractive"
    chat = reader.chat
    if isinstance(chat, OpenAIChat):
        return "server", chat.model
    if isinstance(chat, GGUFChat):
        return "gguf", chat.path
    assert isinstance(chat, LocalChat)
    return "transformers", chat.model_name


def listed(settings: ReaderSettings, cache: Path) -> tuple[str, str]:
    """What ``models`` lists as the reader: (kind, model)."""
    _, row = reader_row(settings, "cpu", cache)
    kind = {"built-in": "extractive", "server": "server", "gguf": "gguf"}.get(row.where)
    if settings.reader == "auto" and row.where == "hub":  # missing: auto reads extractively
        return "extractive", "extractive"
    return kind or "transformers", row.model


def configured(
    settings: ReaderSettings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[str, str]:
    """What ``htmlrag-chat config`` says answers, given the same settings as options and
    variables: (kind, model)."""
    argv = ["config", "--json", "--reader", settings.reader]
    argv += ["--model", settings.model] if settings.model else []
    argv += ["--base-url", settings.base_url] if settings.base_url else []
    ports = ",".join(str(port) for port in settings.probe_ports or ())
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", ports)
    assert main(argv) == 0
    answers = json.loads(capsys.readouterr().out)["answers_with"]
    return answers["kind"], answers["model"]


def offered(settings: ReaderSettings) -> str:
    """The palette's auto entry: the reader auto picks now."""
    [auto] = [c for c in reader_choices(settings) if c.settings.reader == "auto"]
    return auto.title


@pytest.fixture
def hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


def test_ask_models_config_and_the_palette_name_the_same_reader(
    hf_cache: Path,
    tiny_lm_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gguf = str(smollm2_gguf())
    (tmp_path / "config.toml").write_text("", encoding="utf-8")  # no settings of this machine
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(tmp_path / "config.toml"))
    with ThreadedLLM(ScriptedLLM(lambda m: "", model=SERVED)) as url:
        port = urlsplit(url).port or 0
        nothing = ReaderSettings(probe_ports=())
        cases = {
            "auto, nothing here": (nothing, ("extractive", "extractive")),
            "auto, a found server": (replace(nothing, probe_ports=(port,)), ("server", SERVED)),
            "auto, configured": (replace(nothing, base_url=url), ("server", SERVED)),
            "auto, a GGUF file": (replace(nothing, model=gguf), ("gguf", gguf)),
            "auto, a server not listing the model": (
                replace(nothing, model=gguf, probe_ports=(port,)),
                ("gguf", gguf),
            ),
            "auto, a model folder": (
                replace(nothing, model=str(tiny_lm_dir)),
                ("transformers", str(tiny_lm_dir)),
            ),
            "local, a GGUF file": (replace(nothing, reader="local", model=gguf), ("gguf", gguf)),
            "openai at a URL": (
                replace(nothing, reader="openai", base_url=url),
                ("server", SERVED),
            ),
            "extractive": (replace(nothing, reader="extractive"), ("extractive", "extractive")),
        }
        for case, (settings, expected) in cases.items():
            assert built(settings) == expected, case
            assert listed(settings, hf_cache) == expected, case
            assert configured(settings, monkeypatch, capsys) == expected, case
            if settings.reader == "auto":
                plan = plan_reader(settings, look_around(settings))
                assert offered(settings) == f"Reader: auto, now {plan.label}", case
                assert (plan.kind, plan.model) == expected, case


def test_openai_without_a_url_fails_the_same_way_everywhere(hf_cache: Path) -> None:
    settings = ReaderSettings(reader="openai", probe_ports=())
    with pytest.raises(ModelUnavailable, match="needs the server's URL"):
        build_reader(settings, lambda event: None)
    _, row = reader_row(settings, "cpu", hf_cache)
    assert not row.present and "needs the server's URL" in row.note


def test_the_order_is_configured_found_gguf_transformers_extractive() -> None:
    """The pure function alone: each thing found beats everything after it."""
    configured = Server("server", "http://10.0.0.2:8000/v1", ("m-configured",))
    found = (Server("Ollama", "http://127.0.0.1:11434/v1", ("llama3.1:8b",)),)
    disk = OnDisk(gguf="/models/x.gguf", transformers=True)
    auto = ReaderSettings()
    steps = [
        (Surroundings(configured, found, disk), ("server", "m-configured")),
        (Surroundings(None, found, disk), ("server", "llama3.1:8b")),
        (Surroundings(None, (), disk), ("gguf", "/models/x.gguf")),
        (Surroundings(None, (), OnDisk(transformers=True)), ("transformers", DEFAULT_READER_MODEL)),
        (Surroundings(None, (), OnDisk()), ("extractive", "extractive")),
    ]
    for around, expected in steps:
        plan = plan_reader(auto, around)
        assert (plan.kind, plan.model) == expected
    assert plan.why.startswith("no LLM found: answering extractively")
    notices = []
    assert isinstance(
        build_reader(auto, notices.append, Surroundings(None, (), OnDisk())), ExtractiveReader
    )
    assert notices == [Notice(plan.why, role="reader", instead="extractive answers (no LLM)")]


def test_a_reader_on_this_cpu_gets_the_smaller_default_budget(tiny_lm_dir: Path) -> None:
    """The budget rule (docs/benchmarks.md): 2048 where the prefill runs on this CPU."""
    gguf = GGUFChat(str(smollm2_gguf()), gpu_layers=0)
    assert default_budget(LLMReader(gguf, "local")) == CPU_BUDGET == 2048
    local = LocalChat(str(tiny_lm_dir), device="cpu")
    assert default_budget(LLMReader(local, "local")) == CPU_BUDGET
    server = OpenAIChat("http://127.0.0.1:9/v1", "m")
    assert default_budget(LLMReader(server, "openai")) == BUDGET == 4096
    assert default_budget(ExtractiveReader()) == BUDGET


def test_auto_finds_the_largest_gguf_in_the_models_folder(tmp_path: Path, monkeypatch) -> None:
    """Where ``make reader-models`` puts Qwen2.5: found after the pulled default quant,
    never in place of a model the settings name."""
    folder = tmp_path / "models"
    monkeypatch.setenv(MODELS_ENV, str(folder))
    hub = tmp_path / "hub"
    assert models_folder() == folder and on_disk(None, hub).gguf is None  # no folder yet
    folder.mkdir()
    (folder / "small.gguf").write_bytes(b"GGUF" + bytes(10))
    (folder / "big.GGUF").write_bytes(b"GGUF" + bytes(100))
    (folder / "notes.txt").write_bytes(bytes(1000))
    assert on_disk(None, hub).gguf == str(folder / "big.GGUF")
    assert on_disk("owner/other-model", hub).gguf is None
    plan = plan_reader(ReaderSettings(), Surroundings(None, (), on_disk(None, hub)))
    assert (plan.kind, plan.model) == ("gguf", str(folder / "big.GGUF"))
