"""``config``: the settings in effect and where each comes from, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.settings.tree import SETTINGS
from tests.openai_server import ScriptedLLM, ThreadedLLM

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
    assert "--deadline" in out and "--reader" in out and "-m, --model MODEL" in out
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


def test_the_search_settings_show_their_origins_and_no_key(
    config_file: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text(
        '[search]\nbackends = ["searxng", "duckduckgo"]\nsearxng_url = "http://127.0.0.1:8888"\n'
        'exclude_site = ["pinterest.com"]\ntime = "month"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("BRAVE_API_KEY", SECRET)
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.setenv("HTMLRAG_CHAT_SEARXNG_URL", "http://searx.lan:8080")
    argv = ["config", "--json", "--site", "example.org", "--site", "https://www.python.org/"]
    assert main([*argv, "--time", "week", "--region", "de-de"]) == 0
    out = capsys.readouterr().out
    assert SECRET not in out
    search = json.loads(out)["search"]
    file = {"source": "file", "name": str(config_file)}
    assert search["backends"] == {"value": ["searxng", "duckduckgo"], **file}
    assert search["exclude_site"] == {"value": ["pinterest.com"], **file}
    assert search["searxng_url"] == {
        "value": "http://searx.lan:8080", "source": "environment",
        "name": "HTMLRAG_CHAT_SEARXNG_URL",
    }  # fmt: skip
    option = {"source": "option"}
    assert search["site"] == {"value": ["example.org", "python.org"], **option, "name": "--site"}
    assert search["time"] == {"value": "week", **option, "name": "--time"}
    assert search["region"] == {"value": "de-de", **option, "name": "--region"}
    assert search["proxy"] == {"value": None, "source": "default", "name": None}
    assert search["brave_api_key"] == {
        "value": "<hidden>", "source": "environment", "name": "BRAVE_API_KEY"
    }  # fmt: skip
    assert search["tavily_api_key"]["value"] is None

    assert main(["config", "--backends", "tavily,brave-api"]) == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert rows["backends"][1:] == ["tavily,brave-api", "option", "--backends"]
    assert rows["brave_api_key"][1:] == ["<hidden>", "environment", "BRAVE_API_KEY"]


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('backends = ["searxng", "altavista"]', "backends has unknown altavista"),
        ('time = "decade"', "time must be one of day, week, month, year"),
        ('site = "example.org"', "site must be a list of domains"),
        ("searxng_url = 8888", "searxng_url must be a string"),
        ("proxies = []", "unknown [search] settings: proxies"),
    ],
)
def test_a_bad_search_setting_is_one_line_naming_the_file(
    config_file: Path, capsys: pytest.CaptureFixture[str], table: str, expected: str
) -> None:
    config_file.write_text(f"[search]\n{table}\n", encoding="utf-8")
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(config_file) in err and expected in err, err


# -- config set and config init


def config_command(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["config", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_set_creates_the_file_for_its_owner_only_and_config_reads_it_back(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.unlink()
    code, out, _ = config_command(capsys, "set", "reader.max_tokens", "64")
    assert code == 0 and out.strip() == f"reader.max_tokens = 64 in {config_file}"
    assert config_file.read_text(encoding="utf-8") == "[reader]\nmax_tokens = 64\n"
    assert config_file.stat().st_mode & 0o777 == 0o600  # it may come to hold an API key
    assert config_command(capsys, "set", "deadline", "1.5")[0] == 0  # a name alone will do
    record = json.loads(config_command(capsys, "--json")[1])
    assert record["reader"]["max_tokens"] == {
        "value": 64, "source": "file", "name": str(config_file),
    }  # fmt: skip
    assert record["web"]["deadline"]["value"] == 1.5


def test_set_keeps_comments_and_replaces_the_value_in_its_table(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.write_text(
        '# my settings\n[reader]\nreader = "openai"  # the GPU box\nmodel = "a"\n\n'
        "[web]\ndeadline = 2\n",
        encoding="utf-8",
    )
    assert config_command(capsys, "set", "reader.model", 'qwen "2.5"')[0] == 0
    assert config_command(capsys, "set", "research.rounds", "1")[0] == 0
    assert config_command(capsys, "set", "prune.budget", "2048")[0] == 0
    assert config_file.read_text(encoding="utf-8") == (
        '# my settings\n[reader]\nreader = "openai"  # the GPU box\nmodel = "qwen \\"2.5\\""\n\n'
        "[web]\ndeadline = 2\n\n[research]\nrounds = 1\n\n[prune]\nbudget = 2048\n"
    )
    assert list(config_file.parent.glob(".config.toml.*")) == []  # no temporary file left


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["ask", "q", "--backends", "searxng,,altavista"], "has unknown altavista"),
        (["search", "q", "--time", "decade"], "invalid choice: 'decade'"),
        (["ask", "q", "--site", "not a domain"], "not a domain: 'not a domain'"),
    ],
)
def test_a_bad_search_option_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(argv)
    err = capsys.readouterr().err
    assert usage.value.code == 2 and err.count("\n") == 1 and expected in err, err


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["reader.max_tokens", "-5"], "reader.max_tokens must be 1 or more, not -5"),
        (["base_url", "http://[::1"], "reader.base_url is not a URL"),
        (["api_key", "sk\r\nX: y"], "reader.api_key must not hold control characters"),
        (["reader.temperature", "0.2"], "no setting 'reader.temperature' (known: reader.reader"),
    ],
)
def test_a_refused_value_leaves_the_file_as_it_was(
    config_file: Path, capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    before = config_file.read_bytes()
    code, out, err = config_command(capsys, "set", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"htmlrag-chat: {expected}")
    assert "sk\r" not in err
    assert config_file.read_bytes() == before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('reader = {model = "x"}\n', "cannot edit"),
        ("[reader\n", "not valid TOML"),
        ('[reader]\nmodle = "x"\n', "unknown [reader] settings: modle"),
    ],
)
def test_a_file_set_cannot_edit_safely_is_left_alone(
    config_file: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    config_file.write_text(text, encoding="utf-8")
    code, _, err = config_command(capsys, "set", "reader.model", "y")
    assert code == 2 and expected in err and err.count("\n") == 1
    assert config_file.read_text(encoding="utf-8") == text


def test_init_writes_every_setting_at_its_default_once(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config_file.unlink()
    assert config_command(capsys, "init")[1].strip() == str(config_file)
    text = config_file.read_text(encoding="utf-8")
    assert "# max_tokens = 512" in text and '# pruner = "two-stage"' in text
    record = json.loads(config_command(capsys, "--json")[1])
    assert record["reader"]["max_tokens"]["source"] == "default"  # all commented out
    code, _, err = config_command(capsys, "init")
    assert code == 2 and "exists" in err and "config set KEY VALUE" in err
    config_file.write_text("# mine\n", encoding="utf-8")
    assert config_command(capsys, "init")[0] == 2
    assert config_file.read_text(encoding="utf-8") == "# mine\n"
    assert config_command(capsys, "init", "--force")[0] == 0
    assert config_file.read_text(encoding="utf-8") == text


def test_every_line_config_init_writes_is_a_valid_setting_once_uncommented(
    config_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A setting with no default is written at an example (``# model = "qwen2.5:7b"``),
    never as ``# model =``, which is no TOML: uncomment any line and the file still loads."""
    import re

    config_file.unlink()
    assert config_command(capsys, "init")[0] == 0
    text = config_file.read_text(encoding="utf-8")
    setting = re.compile(r"^# (\w+ = .*)$", re.MULTILINE)
    assert len(setting.findall(text)) == len(SETTINGS)
    config_file.write_text(setting.sub(r"\1", text), encoding="utf-8")
    code, out, err = config_command(capsys, "--json")
    assert code == 0, err
    record = json.loads(out)
    model = record["reader"]["model"]
    assert (model["value"], model["source"]) == ("qwen2.5:7b", "file")


def test_a_model_id_holding_half_a_utf16_pair_is_shown_with_u_fffd(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A server listing ``"otter-\\ud83d-7b"`` once ended ``config`` (and ``--json``) in a
    UnicodeEncodeError."""
    llm = ScriptedLLM(reply=lambda messages: "", model="otter-\ud83d-7b", utf16=True)
    with ThreadedLLM(llm) as url:
        server = ["--reader", "openai", "--base-url", url]
        assert main(["config", "--json", *server]) == 0
        record = json.loads(capsys.readouterr().out)
        assert main(["config", *server]) == 0
    assert record["answers_with"]["model"] == "otter-\ufffd-7b"
    assert "otter-\ufffd-7b on the server at" in capsys.readouterr().out
