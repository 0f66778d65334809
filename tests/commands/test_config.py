"""``config``: the settings in effect and where each comes from, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.cli import main

SECRET = "sk-do-not-print-me"


@pytest.fixture
def config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A config file found through the environment, a base URL and a key in the environment,
    and nothing else of the machine running the tests."""
    for name in ("HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY", "HTMLRAG_CHAT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "config.toml"
    path.write_text('[reader]\nreader = "openai"\nmodel = "qwen2.5:7b"\n', encoding="utf-8")
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(path))
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return path


def test_json_names_the_file_variable_or_option_behind_each_reader_setting(
    config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "c.sqlite3"
    argv = ["--cache", str(cache), "config", "--json", "--max-tokens", "64", "--replay"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert SECRET not in out
    record = json.loads(out)
    assert record["config_file"] == {
        "path": str(config_file),
        "exists": True,
        "source": "environment",
        "name": "HTMLRAG_CHAT_CONFIG",
    }
    assert record["cache"] == {"path": str(cache), "source": "option", "name": "--cache"}
    assert record["replay"] == {"value": True, "source": "option", "name": "--replay"}
    reader = record["reader"]
    assert reader["reader"] == {"value": "openai", "source": "file", "name": str(config_file)}
    assert reader["model"] == {"value": "qwen2.5:7b", "source": "file", "name": str(config_file)}
    assert reader["base_url"] == {
        "value": "http://gpu-box:8000/v1",
        "source": "environment",
        "name": "HTMLRAG_CHAT_BASE_URL",
    }
    assert reader["api_key"] == {
        "value": "<hidden>",
        "source": "environment",
        "name": "OPENAI_API_KEY",
    }
    assert reader["max_tokens"] == {"value": 64, "source": "option", "name": "--max-tokens"}
    assert reader["device"] == {"value": "auto", "source": "default", "name": None}
    assert record["web"]["deadline"] == {"value": 3.0, "source": "default", "name": None}


def test_the_question_deadline_shows_the_file_it_came_from(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with config_file.open("a", encoding="utf-8") as file:
        file.write("[web]\ndeadline = 1.5\n")
    assert main(["config"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["deadline"][1:] == ["1.5", "file", str(config_file)]
    assert main(["config", "--deadline", "7"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["deadline"][1:] == ["7", "option", "--deadline"]


def test_help_leaves_out_the_options_config_does_not_take(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["config", "--help"])
    out = capsys.readouterr().out
    assert "--deadline" in out and "--reader" in out and "-m MODEL, --model" in out
    assert "--max-results" not in out and "--coarse-budget" not in out  # search's, prune's
    assert "exit codes" not in out and "examples:" in out


def test_options_before_the_command_count_too_and_text_shows_each_source(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--reader", "extractive", "--replay-db", "rec.db", "config"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
    assert rows["reader"][1:] == ["extractive", "option", "--reader"]
    assert rows["model"][1:] == ["qwen2.5:7b", "file", str(config_file)]
    assert rows["api_key"][1:] == ["<hidden>", "environment", "OPENAI_API_KEY"]
    assert rows["cache"][1:] == ["rec.db", "option", "--replay-db"]
    assert rows["replay"][1:] == ["yes", "option", "--replay-db"]


def test_path_prints_the_file_from_the_option_the_environment_or_the_default(
    config_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    assert main(["config", "path"]) == 0
    assert main(["config", "path", "--config", str(tmp_path / "other.toml")]) == 0
    assert main(["--config", str(tmp_path / "before.toml"), "config", "path"]) == 0
    monkeypatch.delenv("HTMLRAG_CHAT_CONFIG")
    assert main(["config", "path"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == [
        str(config_file),
        str(tmp_path / "other.toml"),
        str(tmp_path / "before.toml"),
    ]
    assert lines[3].endswith("config.toml") and Path(lines[3]).parent.name == "htmlrag-chat"


def test_a_broken_config_file_is_one_line(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text("[reader\n", encoding="utf-8")
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(config_file) in err and "not valid TOML" in err
