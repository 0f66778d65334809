"""``htmlrag-chat eval`` end to end on the committed slice: table, report, resume, errors."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat import cli
from tests.openai_server import ScriptedLLM, ThreadedLLM

FIXTURES = Path(__file__).parent.parent / "fixtures"
RETENTION = str(FIXTURES / "retention.jsonl")
QA = str(FIXTURES / "qa.jsonl")
BASELINES = "plain,clean,chunk-bm25,htmlrag-bm25"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_prints_the_table_and_writes_the_report(capsys, tmp_path):
    out_file = tmp_path / "report.json"
    code, out, err = run(
        capsys, "--cache", str(tmp_path / "c.sqlite3"), "eval", "retention", RETENTION,
        "--methods", "plain,htmlrag-bm25", "--budget", "512,256", "--limit", "2",
        "--tokenizer", "approx", "--out", str(out_file),
    )  # fmt: skip
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert "| method | 256 | 512 |" in lines and "| --- | ---: | ---: |" in lines
    assert any(line.startswith("| htmlrag-bm25 | 0.") for line in lines)
    report = json.loads(out_file.read_text())
    assert list(report) == ["results", "items", "unavailable", "settings"]
    assert list(report["results"]) == ["plain", "htmlrag-bm25"]
    for budgets in report["results"].values():
        assert list(budgets) == ["256", "512"]
        for summary in budgets.values():
            assert list(summary) == ["recall", "leakage", "tokens", "ms"]
            assert 0 <= summary["recall"] <= 1 and 0 < summary["tokens"] <= 512
    assert len(report["items"]) == 2
    item = report["items"][0]
    assert item["file"] == "pages/eishockey-de.html" and item["query"].startswith("Zweimal")
    assert list(item["results"]["plain"]["256"]) == ["with_kept", "without_kept", "tokens", "ms"]


@pytest.mark.eval  # every baseline on every item, twice, through the CLI
def test_a_rerun_comes_from_the_cache_with_the_same_report(capsys, tmp_path):
    argv = [
        "eval", "qa", QA, "--methods", BASELINES, "--k", "2", "--tokenizer", "approx",
        "--cache", str(tmp_path / "c.sqlite3"), "--progress",
    ]  # fmt: skip
    code, first_out, first_err = run(capsys, *argv, "--out", str(tmp_path / "1.json"))
    assert code == 0 and "cached 0" in first_err.splitlines()[-1]
    assert "eval qa 7/7" in first_err
    code, again_out, again_err = run(capsys, *argv, "--out", str(tmp_path / "2.json"))
    assert code == 0 and "computed 0, cached 84" in again_err.splitlines()[-1]
    assert again_out == first_out
    assert (tmp_path / "1.json").read_bytes() == (tmp_path / "2.json").read_bytes()


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["retention", "missing.jsonl"], 3, "missing.jsonl: no such dataset"),
        (["retention", "{bad}"], 3, "bad.jsonl:2: not valid JSON"),
        (["retention", "{page}"], 3, "page file pages/gone.html not found"),
        (["qa", QA, "--methods", "plain,bert"], 2, "--methods: unknown method bert"),
        (["qa", QA, "--budget", "512,abc"], 2, "--budget: not a comma-separated list"),
        (["qa", QA, "--budget", "0"], 2, "--budget: not a comma-separated list"),
        (["qa", QA, "--k", "-1"], 2, "--k must be 0 or more"),
        (["qa", QA, "--pool", "{none}"], 3, "no such folder for the distractor pool"),
    ],
)
def test_bad_input_is_one_line_and_an_exit_code(capsys, tmp_path, argv, code, message):
    bad = tmp_path / "bad.jsonl"
    line = {"url": "u", "file": "pages/gone.html", "with": [], "without": []}
    (tmp_path / "page.html").write_bytes((FIXTURES / "pages/docker-engine.html").read_bytes())
    bad.write_text(json.dumps({**line, "file": "page.html"}) + "\n{")
    page = tmp_path / "page.jsonl"
    page.write_text(json.dumps(line) + "\n")
    names = {"{bad}": str(bad), "{page}": str(page), "{none}": str(tmp_path / "none")}
    argv = [names.get(arg, arg) for arg in argv] + ["--tokenizer", "approx"]
    if "--methods" not in argv:
        argv += ["--methods", "plain"]
    result, out, err = run(capsys, "eval", *argv)
    assert result == code and out == ""
    assert err.count("\n") == 1 and err.startswith("htmlrag-chat: ") and message in err


def results(capsys, tmp_path, task: str, dataset: str) -> dict:
    out_file = tmp_path / f"{task}.json"
    code, _, _ = run(
        capsys, "--cache", str(tmp_path / "c.sqlite3"), "eval", task, dataset,
        "--methods", BASELINES, "--k", "4", "--tokenizer", "approx", "--out", str(out_file),
    )  # fmt: skip
    assert code == 0
    return json.loads(out_file.read_text())["results"]


@pytest.mark.eval  # through the CLI, where tests/tiers.py cannot see it
def test_regression_on_the_committed_slice(capsys, tmp_path):
    """Floors from a measured run of the slice (approximate tokenizer, 4 hard distractors)
    less a margin: a change that loses them has made pruning worse.

    Measured recall at 512 / 1024 / 2048: QA htmlrag-bm25 0.714 / 1.0 / 1.0, chunk-bm25
    0.714 / 0.857 / 1.0, plain 0 / 0.143 / 0.429, clean 0 / 0 / 0.286; retention
    htmlrag-bm25 0.281 / 0.5 / 0.875, plain 0.406 / 0.688 / 0.938.
    """
    qa = results(capsys, tmp_path, "qa", QA)
    recall = {method: {b: s["recall"] for b, s in qa[method].items()} for method in qa}
    assert recall["htmlrag-bm25"]["1024"] >= 0.85 and recall["htmlrag-bm25"]["512"] >= 0.55
    assert recall["chunk-bm25"]["1024"] >= 0.7
    for budget in ("512", "1024", "2048"):
        assert recall["htmlrag-bm25"][budget] >= recall["clean"][budget]
        assert recall["htmlrag-bm25"][budget] >= recall["plain"][budget]
    retention = results(capsys, tmp_path, "retention", RETENTION)
    assert retention["htmlrag-bm25"]["1024"]["recall"] >= 0.4
    assert retention["htmlrag-bm25"]["2048"]["recall"] >= 0.8
    assert retention["plain"]["2048"]["recall"] >= 0.85
    for budgets in (*qa.values(), *retention.values()):
        assert all(summary["tokens"] <= int(budget) for budget, summary in budgets.items())


def test_a_dataset_elsewhere_names_its_pages_folder_and_gets_per_group_tables(capsys, tmp_path):
    lines = [json.loads(line) for line in (FIXTURES / "qa.jsonl").read_text().splitlines()[:2]]
    labels = [("de", "prose"), ("en", "table")]
    dataset = tmp_path / "set.jsonl"
    dataset.write_text(
        "".join(
            json.dumps({**line, "lang": lang, "location": where}) + "\n"
            for line, (lang, where) in zip(lines, labels, strict=True)
        )
    )
    out_file = tmp_path / "report.json"
    code, out, err = run(
        capsys, "eval", "qa", str(dataset), "--pages-dir", str(FIXTURES), "--methods", "chunk-bm25",
        "--k", "2", "--budget", "512", "--tokenizer", "approx",
        "--cache", str(tmp_path / "c.sqlite3"), "--out", str(out_file),
    )  # fmt: skip
    assert code == 0 and err == ""
    assert "by lang: questions whose gold answer is in the context" in out
    assert "by location: questions whose gold answer is in the context" in out
    report = json.loads(out_file.read_text())
    assert set(report["groups"]["lang"]) == {"de", "en"}
    assert report["groups"]["location"]["table"]["items"] == 1
    assert report["items"][0]["pages"][0].startswith("pages/")


def qa_line(page: str, **more: object) -> str:
    line = {"id": "q1", "question": "Under which license is Docker Engine released?"}
    return json.dumps({**line, "answers": ["Apache"], "file": page, **more}) + "\n"


def a_folder_of_pages(tmp_path: Path) -> Path:
    """A dataset's folder (its page, a pool of one more) beside a private file."""
    (tmp_path / "credentials").write_text("<p>aws_secret_access_key = hunter2</p>")
    folder = tmp_path / "data"
    (folder / "pool").mkdir(parents=True)
    (folder / "page.html").write_bytes((FIXTURES / "pages/docker-engine.html").read_bytes())
    (folder / "pool" / "b.html").write_bytes((FIXTURES / "pages/docker-pipenv.html").read_bytes())
    return folder


QA_ARGV = ["--methods", "plain", "--budget", "512", "--tokenizer", "approx", "--k", "1"]


@pytest.mark.parametrize("page", ["ABSOLUTE", "../credentials", "POOL-LINK"])
def test_pages_outside_the_dataset_s_folders_end_eval_qa_with_exit_3(capsys, tmp_path, page):
    folder = a_folder_of_pages(tmp_path)
    if page == "POOL-LINK":
        (folder / "pool" / "c.html").symlink_to(tmp_path / "credentials")
        page = "page.html"
    elif page == "ABSOLUTE":
        page = str(tmp_path / "credentials")
    (folder / "set.jsonl").write_text(qa_line(page))
    code, out, err = run(
        capsys, "--cache", str(tmp_path / "c.db"), "eval", "qa", str(folder / "set.jsonl"),
        "--pool", str(folder / "pool"), *QA_ARGV,
    )  # fmt: skip
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "is outside" in err and "hunter2" not in err


def test_eval_answers_never_sends_a_file_from_outside_to_the_reader(capsys, tmp_path):
    folder = a_folder_of_pages(tmp_path)
    (folder / "set.jsonl").write_text(qa_line(str(tmp_path / "credentials")))
    llm = ScriptedLLM(lambda messages: "Apache 2.0 [1].")
    with ThreadedLLM(llm) as base_url:
        code, _, err = run(
            capsys, "--cache", str(tmp_path / "c.db"), "eval", "answers",
            str(folder / "set.jsonl"), "--reader", "openai", "--base-url", base_url,
            "--model", llm.model, "--methods", "plain", "--budget", "512", "--k", "0",
            "--tokenizer", "approx",
        )  # fmt: skip
    assert code == 3 and "set.jsonl:1: page file" in err and "is outside" in err
    assert llm.requests == []


def test_a_fifo_in_the_pool_is_not_a_page_and_blocks_nothing(capsys, tmp_path):
    folder = a_folder_of_pages(tmp_path)
    os.mkfifo(folder / "pool" / "fifo.html")
    (folder / "set.jsonl").write_text(qa_line("page.html"))
    argv = ["eval", "qa", str(folder / "set.jsonl"), "--pool", str(folder / "pool"), *QA_ARGV]
    done = subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", "--cache", str(tmp_path / "c.db"), *argv],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "| plain | " in done.stdout


@pytest.mark.parametrize("task", ["qa", "retention", "answers"])
def test_a_line_nested_too_deeply_is_exit_3_naming_it(capsys, tmp_path, task):
    dataset = tmp_path / "set.jsonl"
    dataset.write_text("[" * 100_000 + "\n")
    code, out, err = run(capsys, "eval", task, str(dataset), "--tokenizer", "approx")
    assert code == 3 and out == ""
    assert err == f"htmlrag-chat: {dataset}:1: JSON nested too deeply\n"


def test_a_dataset_s_labels_reach_the_tables_as_plain_text(capsys, tmp_path):
    folder = a_folder_of_pages(tmp_path)
    labels = {
        "lang": "\x1b]0;pwned\x07en\x9b2J",
        "location": "\x1b]8;;https://evil.example/\x1b\\ta|ble\x1b]8;;\x1b\\\u202e",
    }
    (folder / "set.jsonl").write_text(qa_line("page.html", **labels))
    code, out, err = run(
        capsys, "--cache", str(tmp_path / "c.db"), "eval", "qa", str(folder / "set.jsonl"),
        "--pool", str(folder / "pool"), *QA_ARGV,
    )  # fmt: skip
    assert code == 0, err
    assert not any(char in out for char in "\x1b\x07\x9b\u202e")
    assert "| ]0;pwneden2J (1) | plain |" in out  # what stays is text, in its cell
    assert "| ]8;;https://evil.example/\\ta\\|ble]8;;\\ (1) | plain |" in out


@pytest.mark.parametrize("task", ["qa", "answers"])
def test_out_follows_the_rules_of_a_file_the_user_named(capsys, tmp_path, task):
    """``eval --out`` and ``eval answers --out`` share ``cache export``'s writer: an existing
    file only with --force, written through a link, never over a FIFO or a device."""
    folder = a_folder_of_pages(tmp_path)
    (folder / "set.jsonl").write_text(qa_line("page.html"))
    llm = ScriptedLLM(lambda messages: "Apache 2.0 [1].")
    kept = tmp_path / "kept.json"
    kept.write_text("an earlier report")
    (tmp_path / "link.json").symlink_to(kept)
    os.mkfifo(tmp_path / "fifo.json")

    def evaluate(out: str, *more: str) -> tuple[int, str]:
        argv = ["--cache", str(tmp_path / "c.db"), "eval", task, str(folder / "set.jsonl")]
        argv += ["--pool", str(folder / "pool"), *QA_ARGV, "--out", str(tmp_path / out), *more]
        if task == "answers":
            argv += ["--reader", "openai", "--base-url", base_url, "--model", llm.model]
        code, _, err = run(capsys, *argv)
        return code, err

    with ThreadedLLM(llm) as base_url:
        code, err = evaluate("kept.json")
        assert code == 2 and f"{tmp_path / 'kept.json'} exists: --force writes over it" in err
        assert kept.read_text() == "an earlier report" and llm.requests == []
        code, err = evaluate("fifo.json", "--force")
        assert code == 2 and "it is not a regular file" in err
        assert stat.S_ISFIFO((tmp_path / "fifo.json").lstat().st_mode)
        assert evaluate("link.json", "--force")[0] == 0
    assert (tmp_path / "link.json").is_symlink() and '"results"' in kept.read_text()
