"""One reader plan: for every case, ``ask`` (``wiring.build_parts``), ``models``
(``inventory.take_inventory``), ``config`` (its "answers with" line) and the palette's
``auto`` entry (``tui.readers``) name the same reader, because all four ask
``reader.backends.plan_reader``. Real servers on loopback (scripted), a real GGUF file, a
real transformers folder, an empty Hugging Face cache."""

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
from htmlrag_chat.inventory import take_inventory
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.backends import backend_of, plan_reader
from htmlrag_chat.reader.choice import OnDisk, Surroundings, look_around
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.gguf import GGUFChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.local import LocalChat
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.settings.tree import BUDGET, CPU_BUDGET
from htmlrag_chat.tui.readers import reader_choices
from htmlrag_chat.wiring import AgentOptions
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.reader.building import build_reader
from tests.smollm2 import smollm2_gguf

SERVED = "llama-3.1-8b-instruct"


def built(settings: ReaderSettings) -> tuple[str, str]:
    """What ``ask`` reads with: (backend, model)."""
    notices: list[object] = []
    reader = build_reader(settings, notices.append)
    if isinstance(reader, ExtractiveReader):
        return reader.kind, "extractive"
    chat = reader.chat
    if isinstance(chat, OpenAIChat):
        return reader.kind, chat.model
    if isinstance(chat, GGUFChat):
        return reader.kind, chat.path
    assert isinstance(chat, LocalChat)
    return reader.kind, chat.model_name


def listed(settings: ReaderSettings, cache: Path) -> tuple[str, str]:
    """What ``models`` lists as the reader: (backend, model)."""
    row = take_inventory(AgentOptions(reader=settings), cache).row("reader")
    if row.where == "server":
        return ("openai" if row.location == settings.base_url else "found"), row.model
    kind = {"built-in": "extractive", "gguf": "gguf"}.get(row.where)
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
            "auto, a found server": (replace(nothing, probe_ports=(port,)), ("found", SERVED)),
            "auto, configured": (replace(nothing, base_url=url), ("openai", SERVED)),
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
                ("openai", SERVED),
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
                assert (plan.backend.name, plan.model) == expected, case


def test_openai_without_a_url_fails_the_same_way_everywhere(hf_cache: Path) -> None:
    settings = ReaderSettings(reader="openai", probe_ports=())
    with pytest.raises(ModelUnavailable, match="needs the server's URL"):
        build_reader(settings, lambda event: None)
    row = take_inventory(AgentOptions(reader=settings), hf_cache).row("reader")
    assert not row.present and "needs the server's URL" in row.note


def test_the_order_is_configured_found_gguf_transformers_extractive() -> None:
    """The pure function alone: each thing found beats everything after it."""
    configured = Server("server", "http://10.0.0.2:8000/v1", ("m-configured",))
    found = (Server("Ollama", "http://127.0.0.1:11434/v1", ("llama3.1:8b",)),)
    disk = OnDisk(gguf="/models/x.gguf", transformers=True)
    auto = ReaderSettings()
    steps = [
        (Surroundings(configured, found, disk), ("openai", "m-configured")),
        (Surroundings(None, found, disk), ("found", "llama3.1:8b")),
        (Surroundings(None, (), disk), ("gguf", "/models/x.gguf")),
        (Surroundings(None, (), OnDisk(transformers=True)), ("transformers", DEFAULT_READER_MODEL)),
        (Surroundings(None, (), OnDisk()), ("extractive", "extractive")),
    ]
    for around, expected in steps:
        plan = plan_reader(auto, around)
        assert (plan.backend.name, plan.model) == expected
    assert plan.why.startswith("no LLM found: answering extractively")
    notices = []
    assert isinstance(
        build_reader(auto, notices.append, Surroundings(None, (), OnDisk())), ExtractiveReader
    )
    assert notices == [Notice(plan.why, role="reader", instead="extractive answers (no LLM)")]


def test_a_reader_on_this_cpu_gets_the_smaller_default_budget(tiny_lm_dir: Path) -> None:
    """The budget rule (docs/benchmarks.md): 2048 where the prefill runs on this CPU."""
    readers = [
        LLMReader(GGUFChat(str(smollm2_gguf()), gpu_layers=0), "gguf"),
        LLMReader(LocalChat(str(tiny_lm_dir), device="cpu"), "transformers"),
        LLMReader(OpenAIChat("http://127.0.0.1:9/v1", "m"), "openai"),
        LLMReader(OpenAIChat("http://127.0.0.1:9/v1", "m"), "found"),
        ExtractiveReader(),
    ]
    budgets = [backend_of(reader).default_budget(reader) for reader in readers]
    assert budgets == [CPU_BUDGET, CPU_BUDGET, BUDGET, BUDGET, BUDGET] == [2048] * 2 + [4096] * 3
