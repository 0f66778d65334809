"""Settings: defaults, then the TOML file, then the environment, then options, each value
checked by its kind whatever its source."""

from __future__ import annotations

from pathlib import Path

import pytest

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.commands.options import REGISTRATIONS
from htmlrag_chat.reader.discover import DEFAULT_PORTS
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.settings.layered import Origin, config_origin, resolve

ENVIRONMENT = (
    "HTMLRAG_CHAT_CONFIG",
    "HTMLRAG_CHAT_API_KEY",
    "OPENAI_API_KEY",
    "HTMLRAG_CHAT_BASE_URL",
    "HTMLRAG_CHAT_PROBE_PORTS",
    "HTMLRAG_CHAT_READER",
    "HTMLRAG_CHAT_MODEL",
)
FILE = """\
[reader]
reader = "openai"
model = "qwen2.5:7b"
base_url = "http://localhost:11434/v1"
api_key = "key-from-file"
max_tokens = 256
context_tokens = 8192
device = "cpu"
probe_ports = [11434, 8081]
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No setting of the machine running the tests leaks in."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def load_reader_settings(path: Path | None = None, **options: object) -> ReaderSettings:
    return ReaderSettings.of(resolve(path, options).section("reader"))


def config_path() -> Path:
    return config_origin()[0]


def write(tmp_path: Path, text: str) -> Path:
    """A config file holding ``text``."""
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def failure(path: Path, **overrides: object) -> str:
    """The one-line message of the UserError that loading ``path`` raises."""
    with pytest.raises(UserError) as raised:
        load_reader_settings(path, **overrides)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_without_a_file_the_defaults_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HTMLRAG_CHAT_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))  # an empty user config directory
    assert not config_path().exists()
    settings = load_reader_settings()
    assert settings == ReaderSettings()
    assert settings.reader == "auto"
    assert settings.probe_ports is None  # the known servers' ports:
    assert DEFAULT_PORTS == (11434, 1234, 8080, 8000)  # Ollama, LM Studio, llama.cpp, vLLM
    assert settings.model is None
    assert settings.base_url is None
    assert settings.api_key is None
    assert settings.max_tokens == 512
    assert settings.context_tokens is None
    assert settings.device == "auto"


def test_a_config_file_named_on_purpose_must_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "missing.toml"
    assert failure(missing) == f"{missing}: no such config file"
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(missing))
    with pytest.raises(UserError, match="no such config file"):
        load_reader_settings()


def test_a_file_without_a_reader_table_gives_the_defaults(tmp_path: Path) -> None:
    assert load_reader_settings(write(tmp_path, "[web]\ndeadline = 2\n")) == ReaderSettings()


def test_an_unknown_table_is_named_with_the_known_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "[raeder]\nx = 1\n")
    assert failure(path) == (
        f"{path}: unknown table [raeder] (known: reader, research, prune, search, web, mcp)"
    )


def test_the_file_sets_every_value(tmp_path: Path) -> None:
    assert load_reader_settings(write(tmp_path, FILE)) == ReaderSettings(
        reader="openai",
        model="qwen2.5:7b",
        base_url="http://localhost:11434/v1",
        api_key="key-from-file",
        max_tokens=256,
        context_tokens=8192,
        device="cpu",
        probe_ports=(11434, 8081),
    )


def test_the_probe_ports_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", " 11434, 9000 ")
    assert load_reader_settings(write(tmp_path, FILE)).probe_ports == (11434, 9000)
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", "")  # no probing at all
    assert load_reader_settings(write(tmp_path, FILE)).probe_ports == ()
    for bad in ("ollama", "11434;1234", "70000"):
        monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", bad)
        assert failure(write(tmp_path, FILE)) == (
            f"HTMLRAG_CHAT_PROBE_PORTS must be comma-separated port numbers, not {bad!r}"
        )


def test_the_file_is_found_through_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, FILE)
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(path))
    assert config_path() == path
    assert load_reader_settings().model == "qwen2.5:7b"


def test_without_the_variable_the_file_is_in_the_user_config_dir() -> None:
    path = config_path()
    assert path.name == "config.toml"
    assert path.parent.name == "htmlrag-chat"


@pytest.mark.parametrize("variable", ["HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY"])
def test_an_api_key_in_the_environment_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "key-from-env")
    settings = load_reader_settings(write(tmp_path, FILE))
    assert settings.api_key == "key-from-env"
    assert settings.model == "qwen2.5:7b"  # the rest still comes from the file


def test_the_tools_own_key_wins_over_openais(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.setenv("HTMLRAG_CHAT_API_KEY", "own-key")
    assert load_reader_settings(write(tmp_path, FILE)).api_key == "own-key"


def test_the_base_url_in_the_environment_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://gpu-box:8000/v1")
    assert load_reader_settings(write(tmp_path, FILE)).base_url == "http://gpu-box:8000/v1"


def test_empty_environment_variables_do_not_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTMLRAG_CHAT_API_KEY", "OPENAI_API_KEY", "HTMLRAG_CHAT_BASE_URL"):
        monkeypatch.setenv(name, "")
    settings = load_reader_settings(write(tmp_path, FILE))
    assert settings.api_key == "key-from-file"
    assert settings.base_url == "http://localhost:11434/v1"


def test_options_override_the_environment_and_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://gpu-box:8000/v1")
    settings = load_reader_settings(
        write(tmp_path, FILE),
        reader="extractive",
        base_url="http://option:1234/v1",
        max_tokens=64,
    )
    assert settings.reader == "extractive"
    assert settings.base_url == "http://option:1234/v1"
    assert settings.max_tokens == 64
    assert settings.model == "qwen2.5:7b"


def test_options_left_as_none_do_not_override(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://gpu-box:8000/v1")
    settings = load_reader_settings(
        write(tmp_path, FILE), reader=None, model=None, base_url=None, max_tokens=None
    )
    assert settings.reader == "openai"
    assert settings.model == "qwen2.5:7b"
    assert settings.base_url == "http://gpu-box:8000/v1"
    assert settings.max_tokens == 256


def test_a_file_that_is_not_toml_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "[reader\nmodel = 'x'\n")
    message = failure(path)
    assert message.startswith(f"{path}: not valid TOML")
    assert "line 1" in message


def test_a_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'[reader]\nmodel = "\xff\xfe"\n')
    assert failure(path).startswith(f"{path}: ")


def test_an_unknown_setting_is_named_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[reader]\nmodel = "x"\ntemprature = 0.2\nmodle = "y"\n')
    assert failure(path) == f"{path}: unknown [reader] settings: modle, temprature"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('max_tokens = "many"', "max_tokens must be a whole number"),
        ("max_tokens = true", "max_tokens must be a whole number"),
        ("context_tokens = 4096.0", "context_tokens must be a whole number"),
        ("model = 7", "model must be a string"),
        ('base_url = ["http://a/v1"]', "base_url must be a string"),
        ("probe_ports = 11434", "probe_ports must be a list of port numbers"),
        ('probe_ports = ["11434"]', "probe_ports must be a list of port numbers"),
        ("probe_ports = [0]", "probe_ports must be a list of port numbers"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_the_file(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = write(tmp_path, f"[reader]\n{line}\n")
    assert failure(path).startswith(f"{path}: [reader] {expected}")


def test_a_reader_key_that_is_not_a_table_is_named_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'reader = "openai"\n')
    assert failure(path) == f"{path}: [reader] must be a table"


def test_an_unknown_reader_in_the_file_is_named_with_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, '[reader]\nreader = "gpt"\n')
    message = failure(path)
    assert message.startswith(f"{path}: ")
    assert "'gpt'" in message
    assert "local, openai, extractive, auto" in message


def test_an_unknown_reader_in_the_environment_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_READER", "gpt")
    message = failure(write(tmp_path, FILE))
    assert message.startswith("HTMLRAG_CHAT_READER must be one of")
    assert "'gpt'" in message
    assert "local, openai, extractive, auto" in message


def test_each_value_names_where_it_came_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, '[reader]\nreader = "openai"\nmodel = "qwen2.5:7b"\nmax_tokens = 256\n')
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://gpu-box:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key")
    monkeypatch.setenv("HTMLRAG_CHAT_PROBE_PORTS", "11434")
    resolved = resolve(path, {"model": "llama3.1:8b", "device": None})
    settings = ReaderSettings.of(resolved.section("reader"))
    origins = {key.removeprefix("reader."): o for key, o in resolved.origins.items()}
    assert settings.model == "llama3.1:8b" and settings.reader == "openai"
    assert {key: origin for key, origin in origins.items() if "." not in key} == {
        "reader": Origin("file", str(path)),
        "model": Origin("option", "--model"),
        "base_url": Origin("environment", "HTMLRAG_CHAT_BASE_URL"),
        "api_key": Origin("environment", "OPENAI_API_KEY"),
        "max_tokens": Origin("file", str(path)),
        "context_tokens": Origin("default"),
        "device": Origin("default"),
        "gpu_layers": Origin("default"),
        "correct_citations": Origin("default"),
        "judge": Origin("default"),
        "judge_model": Origin("default"),
        "probe_ports": Origin("environment", "HTMLRAG_CHAT_PROBE_PORTS"),
    }
    assert settings.probe_ports == (11434,)
    assert REGISTRATIONS  # imported: the GGUF backend's gpu_layers is in the tree


def test_the_config_file_says_where_it_was_chosen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert config_origin()[1] == Origin("default")
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", str(tmp_path / "env.toml"))
    assert config_origin() == (tmp_path / "env.toml", Origin("environment", "HTMLRAG_CHAT_CONFIG"))
    assert config_origin(tmp_path / "opt.toml") == (
        tmp_path / "opt.toml",
        Origin("option", "--config"),
    )


def test_a_variable_that_is_not_utf8_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """As Python reads an environment holding bytes that are not UTF-8: surrogate escapes."""
    monkeypatch.setenv("HTMLRAG_CHAT_MODEL", "ab\udcffcd")
    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent")
    with pytest.raises(UserError, match=r"^HTMLRAG_CHAT_MODEL is not UTF-8 text$"):
        resolve()
