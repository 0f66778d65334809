"""Documented exit codes through the real CLI: one line on stderr, never a traceback.

The read-only cases run the CLI in a child process on a read-only bind mount (a mount
namespace of its own, ``unshare``), since root ignores file permissions.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = "<html><head><title>Eiffel</title></head><body><p>The Eiffel tower was finished in 1889 in Paris.</p></body></html>"  # noqa: E501
QUESTION = "when was the eiffel tower finished"
RECORD = {"query": QUESTION, "results": [{"url": "https://a.example/", "title": "A", "html": PAGE}]}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # an option refused while the command line is parsed
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    """The only line on stderr that is not a note; it must be the whole error."""
    lines = [line for line in err.splitlines() if not line.startswith("htmlrag-chat: note:")]
    assert len(lines) == 1 and lines[0].startswith("htmlrag-chat: "), err
    assert "Traceback" not in err and "internal error" not in err
    return lines[0]


@pytest.fixture
def recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A cache holding one recorded question and its page."""
    lines = tmp_path / "recording.jsonl"
    lines.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    cache = tmp_path / "recording.db"
    assert main(["--cache", str(cache), "cache", "import", "--jsonl", str(lines)]) == 0
    capsys.readouterr()
    return cache


def unusable_devices() -> list[str]:
    devices = ["nonsense", "cpu:1", "cuda:99", "gpu"]
    try:
        import torch
    except ModuleNotFoundError:  # a core install: no CUDA and no MPS without torch
        return [*devices, "cuda", "mps"]
    if not torch.cuda.is_available():
        devices.append("cuda")
    if not torch.backends.mps.is_available():
        devices.append("mps")
    return devices


@pytest.mark.parametrize("device", unusable_devices())
def test_a_device_that_cannot_be_used_is_a_usage_error(capsys, tmp_path, device):
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    code, _, err = run(
        capsys, "prune", "--scorer", "embed", "--device", device, "--tokenizer", "approx",
        "--budget", "50", "-q", "eiffel", str(page),
    )  # fmt: skip
    assert code == 2
    not_a_name = (
        f"htmlrag-chat: argument --device: must be auto, cpu, cuda, cuda:N or mps, not {device!r}"
    )
    assert one_line(err).startswith((f"htmlrag-chat: device {device!r}", not_a_name))
    assert one_line(err).startswith(not_a_name) == (device in ("nonsense", "cpu:1", "gpu"))


def test_a_device_in_the_config_file_is_checked_the_same_way(capsys, tmp_path, recording):
    config = tmp_path / "config.toml"
    config.write_text('[reader]\nreader = "local"\ndevice = "nonsense"\n', encoding="utf-8")
    code, _, err = run(
        capsys, "--replay-db", str(recording), "ask", QUESTION, "--config", str(config)
    )
    assert code == 2 and one_line(err) == (
        f"htmlrag-chat: {config}: [reader] device must be auto, cpu, cuda, cuda:N or mps, "
        "not 'nonsense'"
    )


def test_a_missing_config_file_is_an_error(capsys, tmp_path, recording):
    missing = tmp_path / "missing.toml"
    code, out, err = run(
        capsys, "--replay-db", str(recording), "ask", QUESTION, "--reader", "extractive",
        "--config", str(missing),
    )  # fmt: skip
    assert code == 2 and out == ""
    assert one_line(err) == f"htmlrag-chat: {missing}: no such config file"


NO_HOME = "~nosuchuser/x"
NO_HOME_SAID = "~nosuchuser/x: ~nosuchuser names no user on this system"


@pytest.mark.parametrize(
    ("argv", "variable", "said"),
    [
        (["ask", "--docs", NO_HOME, "--no-web", QUESTION], None, "argument --docs"),
        (["ask", "--no-web", QUESTION], "HTMLRAG_CHAT_DOCS", "HTMLRAG_CHAT_DOCS"),
        (["ask", "--no-web", QUESTION, "--config", "{config}"], None, "[research] docs"),
        (["--cache", NO_HOME, "cache", "stats"], None, "argument --cache"),
        (["cache", "stats"], "HTMLRAG_CHAT_CACHE", "HTMLRAG_CHAT_CACHE"),
        (["ask", "--replay-db", NO_HOME, QUESTION], None, "argument --replay-db"),
        (["ask", "--tokenizer", NO_HOME, QUESTION], None, "argument --tokenizer"),
        (["ask", "--embed-model", NO_HOME, QUESTION], None, "argument --embed-model"),
        (["ask", "--gen-model", NO_HOME, QUESTION], None, "argument --gen-model"),
        (["ask", "-m", NO_HOME, QUESTION], None, "argument -m/--model"),
        (["ask", "--judge-model", NO_HOME, QUESTION], None, "argument --judge-model"),
        (["models"], "HTMLRAG_CHAT_MODELS", "HTMLRAG_CHAT_MODELS"),
    ],
    ids=[
        "--docs", "HTMLRAG_CHAT_DOCS", "docs-setting", "--cache", "HTMLRAG_CHAT_CACHE",
        "--replay-db", "--tokenizer", "--embed-model", "--gen-model", "-m", "--judge-model",
        "HTMLRAG_CHAT_MODELS",
    ],
)  # fmt: skip
def test_a_home_of_no_user_in_any_path_is_a_one_line_usage_error(
    capsys, tmp_path, monkeypatch, argv, variable, said
):
    config = tmp_path / "config.toml"
    config.write_text(f'[research]\ndocs = ["{NO_HOME}"]\n', encoding="utf-8")
    if variable is not None:
        monkeypatch.setenv(variable, NO_HOME)
    code, out, err = run(capsys, *[word.format(config=config) for word in argv])
    assert code == 2 and out == ""
    line = one_line(err)
    assert said in line and NO_HOME_SAID in line


FORGED = "x\nhtmlrag-chat: note: all documents verified safe\n\u202e.html"


@pytest.mark.parametrize(
    "argv",
    [
        ["clean", "{path}"],
        ["cache", "import", "--jsonl", "{path}"],
        ["config", "--config", "{path}"],
        ["--cache", "{folder}", "cache", "stats"],
    ],
    ids=["clean", "cache-import", "config", "cache-folder"],
)
def test_a_path_in_an_error_is_shown_on_one_line(capsys, tmp_path, argv):
    """A name may hold a newline or a bidi override: the error stays one line, escaped."""
    folder = tmp_path / FORGED
    folder.mkdir()
    path = tmp_path / "missing" / FORGED
    words = [word.format(path=path, folder=folder) for word in argv]
    code, out, err = run(capsys, "--cache", str(tmp_path / "c.db"), *words)
    assert code != 0 and out == ""
    line = one_line(err)
    assert "x\\nhtmlrag-chat: note: all documents verified safe\\n\\u202e.html" in line


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_an_out_dir_that_is_not_a_folder_is_a_usage_error(capsys, tmp_path, where):
    page, taken = tmp_path / "page.html", tmp_path / "taken"
    page.write_text(PAGE, encoding="utf-8")
    taken.write_text("keep me", encoding="utf-8")
    out_dir = taken if where == "a file" else taken / "sub"
    code, out, err = run(capsys, "clean", "--out-dir", str(out_dir), str(page))
    assert code == 2 and out == "" and f"--out-dir {out_dir}" in one_line(err)
    assert taken.read_text(encoding="utf-8") == "keep me"


def test_malformed_recordings_are_input_errors_and_the_cache_stays_usable(capsys, tmp_path):
    cache = str(tmp_path / "c.db")
    bad = {
        "not-json.jsonl": "{bad\n",
        "deep.jsonl": "[" * 100_000 + "]" * 100_000 + "\n",
        "shape.jsonl": '{"query": 1}\n',
        "not-gzip.jsonl.gz": json.dumps(RECORD) + "\n",
    }
    for name, text in bad.items():
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        code, out, err = run(capsys, "--cache", cache, "cache", "import", "--jsonl", str(path))
        assert code == 3 and out == "", name
        assert str(path) in one_line(err), name
    code, out, err = run(capsys, "--cache", cache, "cache", "stats")
    assert code == 0 and json.loads(out)["searches"] == 0


def test_an_unwritable_export_is_a_usage_error(capsys, tmp_path, recording):
    target = tmp_path / "no" / "folder" / "out.jsonl"
    code, _, err = run(capsys, "--cache", str(recording), "cache", "export", "--jsonl", str(target))
    assert code == 2 and f"cannot write {target}" in one_line(err)


def test_import_and_stats_agree_on_a_damaged_cache(capsys, tmp_path):
    """Damage in a table an import does not touch: the import refuses the file, as stats
    does, instead of writing into it."""
    cache = tmp_path / "c.db"
    with Store.open(cache) as store:
        store.put_many("m", {f"k{n}": np.full(384, n, dtype=np.float32) for n in range(300)})
        store.vacuum()
    data = bytearray(cache.read_bytes())
    data[26 * 4096 : 26 * 4096 + 100] = random.Random(0).randbytes(100)
    cache.write_bytes(data)
    lines = tmp_path / "r.jsonl"
    lines.write_text(json.dumps(RECORD) + "\n", encoding="utf-8")
    imported = run(capsys, "--cache", str(cache), "cache", "import", "--jsonl", str(lines))
    stats = run(capsys, "--cache", str(cache), "cache", "stats")
    assert imported[0] == stats[0] == 4
    assert str(cache) in one_line(imported[2]) and str(cache) in one_line(stats[2])
    assert cache.read_bytes() == data


# -- read-only folders (a recording on a read-only mount)


def on_readonly_folder(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """Run the CLI with ``folder`` read-only: a read-only bind mount in a mount namespace
    of its own, or, for a user other than root, the folder's permissions."""
    command = [sys.executable, "-m", "htmlrag_chat", *argv]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    unshare = shutil.which("unshare")
    if unshare is not None:
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
        probe = subprocess.run(
            [unshare, "-rm", "sh", "-c", script, "sh", str(folder), "true"], capture_output=True
        )
        if probe.returncode == 0:
            return subprocess.run(
                [unshare, "-rm", "sh", "-c", script, "sh", str(folder), *command],
                capture_output=True, text=True, env=env, cwd=ROOT, timeout=300,
            )  # fmt: skip
    if os.geteuid() == 0:
        pytest.skip("root without unshare: no way to make a folder read-only here")
    folder.chmod(0o555)
    try:
        return subprocess.run(
            command, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
        )
    finally:
        folder.chmod(0o755)


def test_a_recording_on_a_read_only_folder_replays(recording):
    folder = recording.parent
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    answered = on_readonly_folder(
        folder, "--replay-db", str(recording), "ask", QUESTION, "--reader", "extractive",
        "--pruner", "bm25", "--tokenizer", "approx",
    )  # fmt: skip
    assert answered.returncode == 0, answered.stderr
    assert "finished in 1889" in answered.stdout
    stats = on_readonly_folder(folder, "--replay-db", str(recording), "cache", "stats")
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["searches"] == 1
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before


def test_a_damaged_recording_on_a_read_only_folder_is_never_to_be_moved_away(tmp_path):
    recording = tmp_path / "recording.db"
    recording.write_bytes(b"SQLite format 3\x00" + random.Random(1).randbytes(8176))
    result = on_readonly_folder(tmp_path, "--replay-db", str(recording), "cache", "stats")
    assert result.returncode == 4
    line = one_line(result.stderr)
    assert str(recording) in line and "move it away" not in line and "left as it is" in line


def test_clean_into_a_read_only_folder_is_a_usage_error(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(PAGE, encoding="utf-8")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = on_readonly_folder(out_dir, "clean", "--out-dir", str(out_dir), str(page))
    assert result.returncode == 2 and f"--out-dir {out_dir}" in one_line(result.stderr)
    assert list(out_dir.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["--refresh", "abc", "cache", "stats"], ["prune", "page.html"], ["nope"]],
)
def test_argument_errors_are_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert one_line(capsys.readouterr().err).endswith("--help)")


def test_an_unwritable_eval_report_is_a_usage_error(capsys, tmp_path):
    dataset = ROOT / "tests" / "fixtures" / "qa.jsonl"
    taken = tmp_path / "taken"
    taken.write_text("keep me", encoding="utf-8")
    code, _, err = run(
        capsys, "--cache", str(tmp_path / "c.db"), "eval", "qa", str(dataset),
        "--methods", "plain", "--limit", "1", "--tokenizer", "approx",
        "--out", str(taken / "report.json"),
    )  # fmt: skip
    assert code == 2 and "cannot be written" in one_line(err)
