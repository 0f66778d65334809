from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from htmlrag_chat.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pages"
DOCKER = str(FIXTURES / "docker-engine.html")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_clean_one_file_to_stdout(capsys):
    code, out, err = run(capsys, "clean", DOCKER)
    assert code == 0 and err == ""
    assert out.startswith("<html><title>Install Docker Engine") and "<script" not in out


def test_clean_many_files_into_a_folder(capsys, tmp_path):
    files = [str(p) for p in sorted(FIXTURES.glob("*.html"))[:3]]
    code, _, _ = run(capsys, "clean", "--out-dir", str(tmp_path / "out"), *files)
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(
        Path(f).name for f in files
    )


def test_prune_runs_what_ask_runs_stays_in_budget_and_reports_stats(capsys):
    code, out, err = run(
        capsys, "prune", "--stats", "--budget", "300", "--tokenizer", "approx",
        "--query", "Under which license is Docker Engine released?", DOCKER,
    )  # fmt: skip
    assert code == 0
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["tokens_after"] <= 300 < stats["tokens_before"]
    assert stats["tokenizer"] == "approx" and stats["tokenizer_exact"] is False
    # The default recipe, without the generative pruner here: the fused stage alone.
    assert set(stats["ms"]) == {"clean", "fused/blocks", "fused/score", "fused/prune"}
    assert "generative pruner" in err and "first stage only" in err
    assert stats["stages"][0]["max_words"] == 37  # an eighth of the budget, at least 32
    assert "Apache License" in out


def test_two_stage_pruning_reports_model_costs(capsys, tiny_lm_dir, tiny_tokenizer_dir):
    code, _, err = run(
        capsys, "prune", "--stats", "--scorer", "two-stage", "--budget", "300",
        "--coarse-budget", "900", "--gen-model", str(tiny_lm_dir), "--device", "cpu",
        "--tokenizer", str(tiny_tokenizer_dir), "-q", "Which license?", DOCKER,
    )  # fmt: skip
    assert code == 0, err
    stats = json.loads(err.strip().splitlines()[-1])
    for key in ("prompt_tokens", "forward_calls", "prefill_tokens", "trie_nodes", "skipped_nodes"):
        assert stats[key] > 0
    assert [s["scorer"] for s in stats["stages"]] == ["fused", "gen"]
    assert [s["max_words"] for s in stats["stages"]] == [900 // 8, 300 // 8]
    assert stats["stages"][0]["tokens_after"] <= 900 and stats["tokens_after"] <= 300
    assert {"fused/score", "gen/score", "gen/prune"} <= set(stats["ms"])


def test_block_embeddings_are_kept_in_the_cache_file(capsys, tmp_path):
    from htmlrag_chat.store.db import Store

    cache = str(tmp_path / "c.sqlite3")
    argv = ["prune", "--scorer", "embed", "--budget", "300", "--tokenizer", "approx",
            "--device", "cpu", "--cache", cache, "-q", "license", DOCKER]  # fmt: skip
    code, first, _ = run(capsys, *argv)
    with Store.open(cache, readonly=True) as store:
        stored = store.stats()["embeddings"]
    code_again, again, _ = run(capsys, *argv)
    assert code == code_again == 0 and first == again
    assert stored > 10
    with Store.open(cache, readonly=True) as store:
        assert store.stats()["embeddings"] == stored  # nothing new: all were cache hits


def test_missing_model_is_one_line(capsys):
    code, _, err = run(capsys, "prune", "--scorer", "gen", "--gen-model", "no/such-model",
                       "--budget", "100", "--tokenizer", "approx", "-q", "x", DOCKER)  # fmt: skip
    assert code == 2
    assert err.count("\n") == 1 and "no/such-model" in err and "Traceback" not in err


def test_unloadable_tokenizer_is_said_on_stderr_and_in_stats(capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code, _, err = run(capsys, "prune", "--stats", "--budget", "200", "-q", "docker", DOCKER)
    assert code == 0
    assert "note: tokenizer meta-llama/Llama-3.1-8B-Instruct" in err
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["tokenizer"] == "approx" and "approximation" in stats["tokenizer_notice"]


def test_prune_several_pages_keeps_page_subtrees(capsys):
    files = [str(p) for p in sorted(FIXTURES.glob("*.html"))]
    code, out, _ = run(
        capsys, "prune", "--budget", "800", "--tokenizer", "approx", "-q", "Tappara", *files
    )
    assert code == 0
    assert out.count("<html>") >= 1 and "Tappara" in out


def write(tmp_path: Path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], int, str]]:
    nested = b"<body>" + b"<div>" * 10_000 + b"deep" + b"</div>" * 10_000 + b"</body>"
    big = b"<html><body>" + b"<p>" + b"lorem ipsum dolor " * 1_200_000 + b"</p></body></html>"
    return {
        "missing": ([str(tmp_path / "nope.html")], 3, "no such file"),
        "directory": ([str(tmp_path)], 3, "is a directory"),
        "binary": ([write(tmp_path, "x.pdf", b"%PDF-1.4\x00\x01\x02")], 3, "binary data"),
        "empty": ([write(tmp_path, "empty.html", b"")], 0, "no visible text"),
        "not html": ([write(tmp_path, "d.json", b'{"a": 1}')], 0, ""),
        "nested": ([write(tmp_path, "n.html", nested)], 0, ""),
        "20 MB": ([write(tmp_path, "big.html", big)], 0, ""),
        "encoding": (["--encoding", "x-klingon", DOCKER], 3, "unknown encoding: x-klingon"),
    }


@pytest.mark.parametrize(
    "case", ["missing", "directory", "binary", "empty", "not html", "nested", "20 MB", "encoding"]
)
def test_bad_input_is_one_line_or_empty_never_a_traceback(capsys, tmp_path, case):
    files, expected_code, message = bad_inputs(tmp_path)[case]
    code, _out, err = run(
        capsys, "prune", "--pruner", "bm25", "--budget", "100", "--tokenizer", "approx",
        "-q", "x", *files,
    )  # fmt: skip
    assert code == expected_code
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) <= 1
    assert message in err


def test_one_bad_input_does_not_sink_the_others(capsys, tmp_path):
    code, out, err = run(
        capsys, "prune", "--budget", "200", "--tokenizer", "approx", "-q", "docker",
        str(tmp_path / "missing.html"), DOCKER,
    )  # fmt: skip
    assert code == 3
    assert "missing.html: no such file" in err and "Docker" in out


@pytest.mark.parametrize(
    "argv", [["prune", "--budget", "0", "-q", "x", DOCKER], ["prune", DOCKER], ["nope"]]
)
def test_usage_errors_exit_2(argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_console_script_runs_as_a_program():
    result = subprocess.run(
        [sys.executable, "-m", "htmlrag_chat", "clean", DOCKER],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0 and "<title>Install Docker Engine" in result.stdout
