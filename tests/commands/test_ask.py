"""``ask`` end to end on the bundled recording: real CLI, real SQLite, real models (tiny),
a scripted OpenAI-compatible server over loopback where an LLM server is needed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.reader.extractive import HEADER
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.search import SearchSettings
from tests.openai_server import ScriptedLLM, ThreadedLLM

DEMO = Path(__file__).resolve().parents[2] / "demo"
QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
GOLD = QUESTION["answers"][0]


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled recording imported into a fresh cache (used read-only by replays)."""
    path = tmp_path_factory.mktemp("ask") / "recording.db"
    assert (
        main(["--cache", str(path), "cache", "import", "--jsonl", str(DEMO / "recording.jsonl.gz")])
        == 0
    )
    return path


def ask(*args: str) -> list[str]:
    return ["ask", QUESTION["question"], *args]


def test_tiny_local_model_runs_the_whole_pipeline_to_a_complete_json(
    recording: Path, tiny_lm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = str(tiny_lm_dir)
    argv = [
        "--replay",
        str(recording),
        *ask("--reader", "local", "--model", model, "--gen-model", model),
    ]
    code = main([*argv, "--pages", "3", "--budget", "512", "--max-tokens", "24", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    record = json.loads(out)
    assert record["reader"] == "local" and record["model"] == model
    assert record["queries"] == [QUESTION["question"]]
    assert {"plan", "search", "fetch", "clean", "embed/score", "gen/score", "read", "cite"} <= set(
        record["timings_ms"]
    )
    assert record["first_token_ms"] > 0 and record["total_ms"] >= record["first_token_ms"]
    assert [s["number"] for s in record["sources"]] == list(range(1, len(record["sources"]) + 1))
    assert any(s["url"] == QUESTION["gold_url"] for s in record["sources"])
    assert all(s["title"] and s["content"].startswith("<html") for s in record["sources"])
    for key in ("answer", "citations", "flags", "removed_citations", "rounds"):
        assert key in record


def test_extractive_answer_streams_the_gold_answer_with_its_source(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--replay", str(recording), *ask("--reader", "extractive", "--pruner", "bm25")])
    out = capsys.readouterr().out
    assert code == 0
    answer, sources = out.split("\nSources:\n")
    assert answer.startswith(HEADER)
    gold_line = next(line for line in sources.splitlines() if QUESTION["gold_url"] in line)
    gold_number = gold_line.split("]")[0] + "]"
    assert any(GOLD in line and line.endswith(gold_number) for line in answer.splitlines())


def test_auto_without_a_model_says_it_answers_extractively(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--replay", str(recording), *ask("--reader", "auto", "--model", "no/such-model")]
    assert main([*argv, "--pruner", "bm25"]) == 0
    captured = capsys.readouterr()
    assert "answering extractively" in captured.err and "Ollama" in captured.err
    assert "htmlrag-chat models pull no/such-model" in captured.err
    assert captured.out.startswith(HEADER)


def test_the_exchange_is_kept_as_a_conversation(
    recording: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "cache.db"
    cache.write_bytes(recording.read_bytes())
    with Store.open(cache) as store:  # searched before with the default settings: no network
        settings = SearchSettings()
        results = store.get_search(QUESTION["question"], region=None, safesearch=None)
        store.put_search(
            QUESTION["question"], results, region=settings.region, safesearch=settings.safesearch
        )
    assert main(["--cache", str(cache), *ask("--reader", "extractive", "--pruner", "bm25")]) == 0
    with Store.open(cache, readonly=True) as store:
        (conversation,) = store.conversations()
        (message,) = store.messages(conversation["id"])
    assert message["content"] == QUESTION["question"]
    (answer,) = message["answers"]
    assert answer["reader"] == "extractive:extractive" and GOLD in answer["text"]


def scripted(messages: list[dict]) -> str:
    """A server model: plans nothing extra, finds the sources enough, answers with one good
    citation, one to a source that does not exist and one claim its source does not hold."""
    prompt = messages[-1]["content"]
    if "New message:" in prompt:
        return "SEARCH: FaceTime Attention Correction ARKit"
    if "Do the sources above contain" in prompt:
        return "ENOUGH"
    return (
        "FaceTime Attention Correction uses ARKit to grab a depth map of your face [3]. "
        "It was announced on the moon [9]. Bananas are purple vegetables from Norway [1]."
    )


@pytest.fixture
def server() -> Iterator[tuple[str, ScriptedLLM]]:
    llm = ScriptedLLM(reply=scripted)
    with ThreadedLLM(llm) as url:
        yield url, llm


def test_server_reader_streams_an_answer_with_checked_citations(
    recording: Path, server: tuple[str, ScriptedLLM], capsys: pytest.CaptureFixture[str]
) -> None:
    url, llm = server
    argv = [
        "--replay",
        str(recording),
        *ask("--reader", "openai", "--base-url", url, "--model", "m"),
    ]
    assert main([*argv, "--pruner", "bm25"]) == 0
    out = capsys.readouterr().out
    assert "[9]" not in out
    assert "Removed 1 citation(s) to sources that do not exist." in out
    assert '! unsupported: "Bananas are purple vegetables from Norway." cites [1]' in out
    assert "depth map of your face [3]" in out
    assert llm.requests[-1]["model"] == "m" and llm.requests[-1]["stream"] is True


def test_the_default_reader_answers_from_a_server_found_on_loopback(
    recording: Path,
    server: tuple[str, ScriptedLLM],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No --reader, no --base-url: the server on a probed port answers, and a line says so."""
    url, llm = server
    port = url.split(":")[-1].removesuffix("/v1")
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", port)
    assert main(["--replay", str(recording), *ask("--pruner", "bm25")]) == 0
    captured = capsys.readouterr()
    line = f"reader: scripted-llm on the server at 127.0.0.1:{port} (found on this machine)"
    assert f"htmlrag-chat: note: {line}" in captured.err.splitlines()
    assert "depth map of your face [3]" in captured.out
    assert llm.requests[-1]["model"] == "scripted-llm"


def test_usage_errors_are_one_line(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--replay", str(recording), "ask", "  "]) == 2
    assert main(["--replay", str(recording), *ask("--reader", "openai")]) == 2
    assert main(["--replay", str(recording), *ask("--reader", "local", "--model", "/no/such")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("htmlrag-chat: ") for line in errors)
    assert "question is empty" in errors[0] and "--base-url" in errors[1]


def test_an_unreachable_reader_server_exits_5(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [
        "--replay",
        str(recording),
        *ask("--reader", "openai", "--base-url", f"http://127.0.0.1:{port}/v1"),
    ]
    assert main([*argv, "--pruner", "bm25"]) == 5
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the tokenizer's notice
    assert last.startswith("htmlrag-chat: cannot reach the reader server at http://127.0.0.1")


def test_a_question_missing_from_the_replay_is_named(
    recording: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--replay",
        str(recording),
        "ask",
        "What is the capital of Peru?",
        "--reader",
        "extractive",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "skipped query What is the capital of Peru?: query not in the recording" in err
    assert "none of the searches is in the recording" in err
