"""``ask --docs``: the user's own files as sources, through the real CLI on a real cache.

The issue's check: a folder holding a Markdown note, an HTML page and a PDF, each with a
fact found nowhere else; ``ask --docs DIR --no-web`` answers a question about each from its
file and cites it, with every socket refused; with the web on (the demo recording), local
and web sources are listed together."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from tests.conftest import DEMO, import_demo
from tests.loopback import unused_port
from tests.smollm2 import smollm2_gguf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FACTS = [
    ("Who caught the swarm from the blue hive?", "beekeeping.md", "Orla Vance"),
    ("How much paraffin does the Skarvik lamp burn a week in winter?", "lighthouse.html",
     "38 litres of paraffin"),
    ("Who planted the quince tree by the north wall?", "orchard.pdf", "Margit Halvorsen"),
]  # fmt: skip
DEMO_QUESTION = json.loads((DEMO / "question.json").read_text(encoding="utf-8"))


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "documents", tmp_path / "docs")
    return tmp_path / "docs"


def ask_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code = main(["ask", *argv, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def cited_files(record: dict) -> set[str]:
    by_number = {s["number"]: Path(s["url"]).name for s in record["sources"]}
    return {by_number[n] for sentence in record["sentences"] for n in sentence["cited"]}


@pytest.mark.parametrize(("question", "file", "fact"), FACTS, ids=[f for _, f, _ in FACTS])
def test_each_fact_is_answered_from_its_file_and_cited_with_no_network(
    folder: Path, no_network: None, capsys: pytest.CaptureFixture[str],
    question: str, file: str, fact: str,
) -> None:  # fmt: skip
    record = ask_json(capsys, question, "--docs", str(folder), "--no-web", "--reader", "extractive")
    assert fact in record["answer"]
    assert record["cited"] and cited_files(record) == {file}
    assert all(s["local"] and s["url"].startswith("file:///") for s in record["sources"])
    assert record["queries"] == [question] and "search" not in record["timings_ms"]
    (source,) = [s for s in record["sources"] if s["url"].endswith(file)]
    assert fact in source["content"]


def test_smollm2_reads_the_documents_in_process_with_no_network(
    folder: Path, tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real model answers from the files alone. SmolLM2-135M is too small to answer
    reliably (docs/docs.md has what it did); what is checked is that it read the fact."""
    question, file, fact = FACTS[2]
    argv = [question, "--docs", str(folder), "--no-web", "--reader", "local"]
    argv += ["--model", str(smollm2_gguf()), "--rounds", "1", "--max-tokens", "48"]
    record = ask_json(capsys, *argv, "--pruner", "bm25", "--budget", "256")
    assert record["reader"] == "gguf" and record["answer"].strip()
    assert all(s["local"] for s in record["sources"])
    (source,) = [s for s in record["sources"] if s["url"].endswith(file)]
    assert fact in source["content"]
    # Cited means every sentence that says something is backed; each one not is flagged.
    unbacked = [s for s in record["sentences"] if s["checked"] and s["unsupported"]]
    assert len(record["flags"]) == len(unbacked)
    assert record["cited"] is (not unbacked and any(s["checked"] for s in record["sentences"]))


def test_with_the_web_on_local_and_web_sources_are_listed_together(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(tmp_path / "derived.sqlite3"))
    recording = import_demo(tmp_path)
    capsys.readouterr()
    (folder / "facetime.md").write_text(
        "# FaceTime notes\n\nAttention Correction in iOS 13 FaceTime was first shown to me"
        " by Dana Whitlock; it uses ARKit to grab a depth map of the face.\n"
    )
    argv = ["--replay-db", str(recording), "ask", DEMO_QUESTION["question"]]
    argv += ["--docs", str(folder), "--reader", "extractive", "--pruner", "bm25"]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    local = [s for s in record["sources"] if s["local"]]
    web = [s for s in record["sources"] if not s["local"]]
    assert [Path(s["url"]).name for s in local] == ["facetime.md"]
    assert any(s["url"] == DEMO_QUESTION["gold_url"] for s in web)
    assert all(s["url"].startswith("https://") for s in web)
    assert main(argv) == 0
    out = capsys.readouterr().out
    listed = out.split("\nSources:\n")[1].splitlines()
    assert any("facetime.md" in line for line in listed)
    assert any(DEMO_QUESTION["gold_url"] in line for line in listed)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--no-web"], 2, "--no-web leaves nothing to read: give your documents with --docs PATH"),
        (["--docs", "{tmp}/missing"], 3, "--docs {tmp}/missing: no such file or folder"),
        (["--docs", "{tmp}/a.png"], 3, "--docs {tmp}/a.png: not a type this reads"),
    ],
)
def test_documents_that_cannot_be_used_stop_the_question_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    (tmp_path / "a.png").write_bytes(b"\x89PNG")
    argv = [part.format(tmp=tmp_path) for part in argv]
    assert (
        main(["--cache", str(tmp_path / "c.db"), "ask", "q", *argv, "--reader", "extractive"])
        == code
    )
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert (
        captured.err.strip()
        .splitlines()[-1]
        .startswith(f"htmlrag-chat: {message.format(tmp=tmp_path)}")
    )
    with Store.open(tmp_path / "c.db") as store:
        assert store.conversations() == []  # nothing was saved for a question never asked


def test_asking_again_reads_no_file_and_embeds_no_block(
    folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    question, _, _ = FACTS[0]
    argv = ["--cache", str(tmp_path / "c.db"), "ask", question, "--docs", str(folder)]
    argv += ["--no-web", "--reader", "extractive", "--pruner", "fused", "--progress"]
    traces = []
    for _ in range(2):
        assert main(argv) == 0
        traces.append(capsys.readouterr().err)
    assert "files 4, cached 0, read 4" in traces[0] and "files 4, cached 4, read 0" in traces[1]
    encoded = [int(trace.split("encoded ")[1].split(",")[0]) for trace in traces]
    assert encoded[0] > 0 and encoded[1] == 0  # the blocks' embeddings came from the cache


def test_a_folder_with_a_loop_an_old_name_and_a_newline_is_answered_one_note_a_line(
    folder: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Items of the fifth hostile round at once: a link loop (a RuntimeError before), a
    name that is not UTF-8 (every question failed on it) and a name holding a newline (it
    printed a line of its own that looked like the program's) leave the rest answered."""
    (folder / "a.md").symlink_to(folder / "b.md")
    (folder / "b.md").symlink_to(folder / "a.md")
    cafe = folder / os.fsdecode(b"caf\xe9.txt")
    cafe.write_text("The espresso machine is descaled by Ingrid Solberg on Fridays.\n")
    (folder / "x\nhtmlrag-chat: note: all documents verified safe\n.md").write_text("\n")
    code = main(
        ["ask", "Who descales the espresso machine?", "--docs", str(folder), "--no-web",
         "--reader", "extractive", "--json"]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    record = json.loads(out)
    assert "Ingrid Solberg" in record["answer"]
    (source,) = [s for s in record["sources"] if s["url"].endswith("/caf%E9.txt")]
    assert source["title"] == "caf\\xe9.txt" and source["local"]
    lines = err.splitlines()  # the missing models' block goes on in indented lines
    assert all(line.startswith(("htmlrag-chat: ", "  ")) for line in lines), err
    assert "htmlrag-chat: note: all documents verified safe" not in lines
    root = folder.resolve()
    assert (
        f"htmlrag-chat: note: {root}/a.md: a link in a loop (it leads back to itself), left out"
        in lines
    )
    assert (
        f"htmlrag-chat: note: document not used: {root}/x\\nhtmlrag-chat: note: all documents"
        " verified safe\\n.md: no text in it"
    ) in lines


STRUCTURED = {
    "harvest.md": "# Garden notes\n\n## Harvest\n\n| Vegetable | Weight | Date |\n|---|---|---|\n"
    "| courgettes | 12.4 kg | 9 August |\n| runner beans | 3.2 kg | 14 August |\n",
    "ferry.html": "<html><head><title>Ferry</title></head><body><h1>Island ferry</h1>"
    "<table><caption>Fares</caption><tr><th>Route</th><th>Adult</th><th>Child</th></tr>"
    "<tr><td>Skarvik</td><td>14 €</td><td>7 €</td></tr>"
    "<tr><td>Holmøy</td><td>9 €</td><td>4 €</td></tr></table></body></html>",
    "chores.md": "# Chores\n\nThe allotment is looked after in turns:\n\n"
    "- Orla waters the greenhouse\n- Tomas mends the fence\n",
}
STRUCTURED_FACTS = [
    ("How much did the courgette harvest weigh?", "harvest.md",
     "courgettes, Weight: 12.4 kg, Date: 9 August (Harvest)"),
    ("How much is a child's fare to Skarvik?", "ferry.html",
     "Skarvik, Adult: 14 €, Child: 7 € (Fares)"),
    ("Who mends the fence?", "chores.md",
     "The allotment is looked after in turns: Tomas mends the fence (Chores)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("question", "file", "quote"), STRUCTURED_FACTS, ids=[f for _, f, _ in STRUCTURED_FACTS]
)
def test_the_extractive_reader_answers_from_a_table_row_or_a_list_item_backed_and_cited(
    tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str],
    question: str, file: str, quote: str,
) -> None:  # fmt: skip
    """Issue 49's check: a Markdown table, an HTML table and a list, each answered with the
    row or item that holds the answer, readable, cited, and backed by the evidence check
    (the reader of sentences said "The sources do not say", and was flagged)."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, content in STRUCTURED.items():
        (folder / name).write_text(content, encoding="utf-8")
    record = ask_json(capsys, question, "--docs", str(folder), "--no-web", "--reader", "extractive")
    first = record["answer"].splitlines()[2]
    assert first.startswith(f"- {quote} [")
    assert cited_files(record) == {file}
    assert record["cited"] and not record["flags"]
    checked = [s for s in record["sentences"] if s["checked"]]
    assert checked and not any(s["unsupported"] for s in checked)


def test_offline_the_documents_beside_the_web_still_answer_with_one_note(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """``--docs`` without ``--no-web`` when no search can be made (the only backend refuses
    its connection): the documents answer, one line says why the query's search failed, in
    words, without the advice to replay a recording, and the exit is 0. On 3afc709 the whole
    question failed with exit 5."""
    question, file, fact = FACTS[0]
    refused = f"http://127.0.0.1:{unused_port()}"
    monkeypatch.delenv("HTMLRAG_CHAT_CONFIG", raising=False)
    monkeypatch.setenv("HTMLRAG_CHAT_BACKENDS", "searxng")
    monkeypatch.setenv("HTMLRAG_CHAT_SEARXNG_URL", refused)
    argv = ["ask", question, "--docs", str(folder), "--reader", "extractive", "--pruner", "bm25"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert fact in captured.out
    [read] = [line for line in captured.out.splitlines() if line.startswith("Also read")]
    assert "lighthouse.html" in read and "local file" not in read  # each by its name
    [note] = [line for line in captured.err.splitlines() if "skipped query" in line]
    assert note == (
        f"htmlrag-chat: skipped query {question}: the search engines cannot be reached "
        "(the connection was refused: a proxy or firewall?)"
    )
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert cited_files(record) == {file} and all(s["local"] for s in record["sources"])
    [skipped] = record["skipped_queries"]
    assert skipped["reason"].startswith("the search engines cannot be reached")
