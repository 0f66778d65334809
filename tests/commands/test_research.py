"""``research`` through the real CLI: real files as documents with no network, a real cache
and history, a scripted reader server on loopback, and SmolLM2 once for the real path."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from tests.commands.test_output import in_terminal
from tests.conftest import DEMO, default_sigint, import_demo
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.smollm2 import smollm2_gguf

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
QUESTION = "Who caught the swarm from the blue hive, and how much paraffin does the lamp burn?"
SWARM = "Who caught the swarm from the blue hive?"
PARAFFIN = "How much paraffin does the Skarvik lamp burn a week in winter?"
FACTS = {SWARM: ("Orla Vance", "beekeeping.md"), PARAFFIN: ("38 litres", "lighthouse.html")}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "documents", tmp_path / "docs")
    return tmp_path / "docs"


def research(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> tuple[str, str]:
    status = main(["research", *argv])
    captured = capsys.readouterr()
    assert status == code, captured.err
    return captured.out, captured.err


def extractive(cache: Path, folder: Path) -> list[str]:
    return [
        "--cache", str(cache), "research", QUESTION, "--docs", str(folder), "--no-web",
        "--reader", "extractive", "--pruner", "bm25", "--part", SWARM, "--part", PARAFFIN,
    ]  # fmt: skip


def cited_files(part: dict[str, Any], references: list[dict[str, Any]]) -> set[str]:
    by_number = {r["number"]: Path(r["url"]).name for r in references}
    return {
        by_number[n]
        for sentence in part["sentences"]
        for n in sentence["corrected"] or sentence["cited"]
    }


def test_parts_given_are_answered_from_their_files_and_reported_once(
    folder: Path, tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "c.db"
    argv = extractive(cache, folder)
    out_md, out_html = tmp_path / "report.md", tmp_path / "report.html"
    status = main([*argv, "--json", "--markdown", str(out_md), "--html", str(out_html)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    record = json.loads(captured.out)
    assert [p["part"] for p in record["parts"]] == [SWARM, PARAFFIN] and record["parts_given"]
    for part in record["parts"]:
        fact, file = FACTS[part["part"]]
        assert part["state"] == "answered" and fact in part["answer"]
        assert cited_files(part, record["references"]) == {file}
    # One numbering for the report: each file once, the cited ones first.
    urls = [r["url"] for r in record["references"]]
    assert len(urls) == len(set(urls)) and all(u.startswith("file:///") for u in urls)
    assert [r["cited"] for r in record["references"]][:2] == [True, True]
    assert "Orla Vance" in record["short_answer"] and "38 litres" in record["short_answer"]
    assert "research in 2 parts, as given" in captured.err
    assert "## 1. Who caught the swarm" in out_md.read_text(encoding="utf-8")
    assert out_html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # The report is kept in the history as a conversation.
    assert main(["--cache", str(cache), "history", "show", "1"]) == 0
    shown = capsys.readouterr().out
    assert f"## {QUESTION}" in shown and "### 2. How much paraffin" in shown
    assert "Orla Vance" in shown and "beekeeping.md" not in shown.split("**Sources**")[0]


def test_the_extractive_reader_researches_a_question_written_as_a_list_without_parts_given(
    folder: Path, tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out, err = research(
        capsys, QUESTION, "--cache", str(tmp_path / "c.db"), "--docs", str(folder), "--no-web",
        "--reader", "extractive", "--pruner", "bm25", "--json",
    )  # fmt: skip
    record = json.loads(out)
    assert [p["part"] for p in record["parts"]] == [
        SWARM,
        "How much paraffin does the lamp burn?",
    ]
    assert not record["parts_given"] and "give its parts with --part" not in err
    assert "research in 2 parts, as the question lists them:" in err
    for part, (fact, file) in zip(record["parts"], FACTS.values(), strict=True):
        assert part["state"] == "answered" and fact in part["answer"]
        assert file in cited_files(part, record["references"])


def test_the_same_research_again_comes_from_the_cache(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = extractive(tmp_path / "c.db", folder)
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out == first
    assert captured.err.count("answered (from the cache)") == 2
    # A document changed: its parts are asked again.
    (folder / "notes" / "beekeeping.md").write_text("The swarm was caught by Ada Lind.\n")
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "(from the cache)" not in captured.err and "Ada Lind" in captured.out


def test_the_report_on_stdout_has_the_parts_their_evidence_and_the_references(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = extractive(tmp_path / "c.db", folder)
    out, _ = research(capsys, *argv[3:], "--cache", str(tmp_path / "c.db"), "--quotes")
    short, rest = out.split("\n\n1. ", 1)
    assert short.startswith("Short answer: ") and "Orla Vance" in short
    assert f"\n\n2. {PARAFFIN}\n" in rest
    assert "\nSources:\n[1] " in rest and "beekeeping.md" in rest


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], 'research needs a question: htmlrag-chat research "QUESTION"'),
        (["Q", *[f"--part=Q{n}" for n in range(6)]], "6 parts given: a research asks at most 5"),
        (["Q", "--part", "A", "--part", "B", "--max-parts", "1"], "2 parts given"),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_kept(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.setattr(sys, "stdin", Terminal())
    cache = tmp_path / "c.db"
    status = main(["--cache", str(cache), "research", *argv, "--reader", "extractive"])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert message in err.strip().splitlines()[-1]
    if cache.exists():
        with Store.open(cache) as store:
            assert store.conversations() == []


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_an_export_file_is_refused_before_any_work(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.html").write_text("mine")
    argv = extractive(tmp_path / "c.db", folder)
    assert main([*argv, "--html", str(tmp_path / "report.html")]) == 2
    err = capsys.readouterr().err
    assert "report.html exists: --force writes over it" in err
    assert (tmp_path / "report.html").read_text() == "mine"
    assert not (tmp_path / "c.db").exists()


def test_a_terminal_shows_the_parts_and_one_status_line(folder: Path, tmp_path: Path) -> None:
    argv = extractive(tmp_path / "c.db", folder)
    code, drawn, _ = in_terminal(argv, tmp_path)
    assert code == 0
    # Each line as it was left: a status line is drawn over with carriage returns.
    lines = [line.split("\r")[-1] for line in drawn.replace("\r\n", "\n").split("\n")]
    assert "htmlrag-chat: research in 2 parts, as given:" in lines
    ended = [line for line in lines if "part 1/2 answered" in line]
    # The extractive reader quotes the sentence and two rows of the hive table (issue 49).
    assert ended == ["htmlrag-chat: part 1/2 answered: 3 sentences, 3 backed, 4 sources"]
    assert re.search(r"\rpart [12]/2 · ", drawn)  # the live line names the running part


def slow_second_part(messages: list[dict[str, Any]]) -> str:
    """A server model that splits the question and answers the second part slowly."""
    prompt = messages[-1]["content"]
    if "Question to research:" in prompt:
        return f"PART: {SWARM}\nPART: {PARAFFIN}"
    if "Do the sources above contain" in prompt:
        return "ENOUGH"
    if "paraffin" in prompt.rsplit("Question:", 1)[-1]:
        return "The lamp burns paraffin " * 2000
    number = re.search(r"\[(\d+)\] Beekeeping log", prompt)
    return f"Orla Vance caught the swarm from the blue hive [{number[1] if number else 1}]."


@pytest.fixture
def slow_server() -> Iterator[str]:
    with ThreadedLLM(ScriptedLLM(reply=slow_second_part, chunk_delay=0.02)) as url:
        yield url


def test_ctrl_c_keeps_the_parts_done_and_the_same_research_resumes_from_them(
    folder: Path, tmp_path: Path, slow_server: str
) -> None:
    argv = [
        "--cache", str(tmp_path / "c.db"), "research", QUESTION, "--docs", str(folder),
        "--no-web", "--reader", "openai", "--base-url", slow_server, "--model", "scripted-llm",
        "--pruner", "bm25", "--tokenizer", "approx", "--rounds", "1",
    ]  # fmt: skip
    env = os.environ | {"PYTHONPATH": str(ROOT), "HTMLRAG_CHAT_DERIVED": str(tmp_path / "d.db")}
    child = subprocess.Popen(
        [sys.executable, "-m", "htmlrag_chat", *argv],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=default_sigint,
    )  # fmt: skip
    assert child.stderr is not None
    err = ""
    deadline = time.monotonic() + 240
    while "part 1/2 answered" not in err:
        assert time.monotonic() < deadline and child.poll() is None, err
        err += child.stderr.readline()
    time.sleep(1.0)  # well into the second part's slow answer
    child.send_signal(signal.SIGINT)
    out, rest = child.communicate(timeout=120)
    assert child.returncode == 130, err + rest
    assert "Orla Vance" in out and "Part 2: stopped before it was answered." in out
    assert "stopped: 1 of 2 parts answered" in rest and "Traceback" not in rest
    with Store.open(tmp_path / "c.db") as store:
        [conversation] = store.conversations()
        [message] = store.messages(conversation["id"])
        assert "Orla Vance" in message["answers"][0]["text"]
    rerun = subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", *argv, "--part", SWARM],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert "part 1/1 answered (from the cache)" in rerun.stderr


def test_smollm2_researches_two_parts_from_the_files_in_process(
    folder: Path, tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The real path with a real model: SmolLM2-135M is too small to split or answer well;
    what is checked is that each part read its file and the report holds what it said."""
    argv = [
        "--cache", str(tmp_path / "c.db"), "research", QUESTION, "--docs", str(folder),
        "--no-web", "--reader", "local", "--model", str(smollm2_gguf()), "--rounds", "1",
        "--max-tokens", "32", "--pruner", "bm25", "--budget", "256", "--part", SWARM,
        "--part", PARAFFIN, "--json",
    ]  # fmt: skip
    out, _ = research(capsys, *argv[3:], "--cache", str(tmp_path / "c.db"))
    record = json.loads(out)
    assert record["reader"] == "gguf" and [p["state"] for p in record["parts"]] == [
        "answered",
        "answered",
    ]
    for part in record["parts"]:
        fact, file = FACTS[part["part"]]
        read = [r for r in record["references"] if r["number"] in part["sources"]]
        assert any(Path(r["url"]).name == file and fact in r["content"] for r in read)
        unbacked = [s for s in part["sentences"] if s["checked"] and s["unsupported"]]
        assert len(part["flags"]) == len(unbacked)


def test_a_replay_researches_from_the_recording_and_keeps_parts_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The recording is only read: the parts go to the side file of derived artefacts, the
    report to the history file beside it; a part not in the recording says so."""
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.sqlite3"))
    recording = import_demo(tmp_path)
    before = recording.read_bytes()
    capsys.readouterr()
    question = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))
    argv = [
        "--replay-db", str(recording), "research", question["question"], "--reader",
        "extractive", "--pruner", "bm25", "--part", question["question"], "--part",
        "Who won the 1950 world cup?", "--json",
    ]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    found, missing = record["parts"]
    assert found["state"] == "answered" and "ARKit" in found["answer"]
    assert missing["state"] == "nothing found" and "is in the recording" in missing["reason"]
    assert record["short_answer"].endswith("Part 2: nothing found: " + missing["reason"] + ".")
    assert recording.read_bytes() == before
    assert main(argv) == 0
    assert "part 1/2 answered (from the cache)" in capsys.readouterr().err
