"""Options generated from the settings tree, through the real CLI: each command shows the
options of the settings it takes and no others, every option and positional says what it
does, each command's help ends with examples, and a bad value is one line and exit 2
whatever its source (option, environment, file), before any work is done."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from htmlrag_chat.cli import build_parser, main
from htmlrag_chat.settings.kinds import Integer, Ports, Text, Url
from htmlrag_chat.settings.tree import SECTIONS, SETTINGS

SETTING_VARIABLES = [name for setting in SETTINGS for name in setting.env]


@pytest.fixture(autouse=True)
def no_settings_of_this_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in [*SETTING_VARIABLES, "HTMLRAG_CHAT_CONFIG"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit:  # argparse: --help, or an option refused while parsing
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def commands() -> dict[str, argparse.ArgumentParser]:
    """Every command and action of the real parser, by its words (``config set``)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def visit(parser: argparse.ArgumentParser, words: str) -> None:
        found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    visit(sub, f"{words} {name}".strip())

    visit(build_parser(), "")
    return found


def option_names(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_each_command_takes_the_options_of_exactly_the_settings_that_name_it() -> None:
    parsers = commands()
    for setting in SETTINGS:
        for words, parser in parsers.items():
            name = words.split(" ")[0] if words else "chat"
            name = "ask" if name == "serve" else name  # it answers ask's questions, as ask
            if words in ("config path", "config set", "config init"):
                continue  # actions on the file itself
            expected = name in setting.commands
            dests = {action.dest for action in parser._actions if action.option_strings}
            assert (setting.name in dests) == expected, (words, setting.key)
    assert "-m" in option_names(parsers["ask"]) and "-m" in option_names(parsers[""])


def test_options_a_command_ignores_are_not_shown_for_it() -> None:
    parsers = commands()
    for words in ("history", "config", "prune", "eval", "cache", "clean", "models"):
        assert "--refresh" not in option_names(parsers[words]), words
    for words in ("history", "cache", "clean", "fetch", "completion"):
        assert "--reader" not in option_names(parsers[words]), words
    assert "--refresh" in option_names(parsers["ask"]) | option_names(parsers["search"])


def test_every_option_and_positional_says_what_it_does() -> None:
    for words, parser in commands().items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            assert action.help, (words or "htmlrag-chat", action.dest)


def test_each_command_help_ends_with_examples_and_only_the_top_shows_exit_codes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, top, _ = run(capsys, "--help")
    assert code == 0 and "exit codes:" in top and "examples:" in top
    for words in commands():
        if not words:
            continue
        code, out, _ = run(capsys, *words.split(), "--help")
        assert code == 0, words
        assert "exit codes:" not in out and "examples:" in out, words
        examples = out[out.index("examples:") :].splitlines()[1:]
        assert 4 <= len(examples) <= 6, words  # two or three, each with what it does
        assert all("htmlrag-chat" in line for line in examples[::2]), words


def test_model_has_a_short_flag_and_the_environment_names_reader_and_model(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(capsys, "config", "--json", "-m", "qwen2.5:7b")
    assert code == 0
    assert json.loads(out)["reader"]["model"] == {
        "value": "qwen2.5:7b", "source": "option", "name": "--model",
    }  # fmt: skip
    monkeypatch.setenv("HTMLRAG_CHAT_READER", "extractive")
    monkeypatch.setenv("HTMLRAG_CHAT_MODEL", "llama3.2")
    monkeypatch.setenv("HTMLRAG_CHAT_PAGES", "4")
    record = json.loads(run(capsys, "config", "--json")[1])
    assert record["reader"]["reader"] == {
        "value": "extractive", "source": "environment", "name": "HTMLRAG_CHAT_READER",
    }  # fmt: skip
    assert record["reader"]["model"]["value"] == "llama3.2"
    assert record["research"]["pages"] == {
        "value": 4, "source": "environment", "name": "HTMLRAG_CHAT_PAGES",
    }  # fmt: skip


def test_every_setting_can_come_from_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    examples = {Integer: 7, Url: "http://gpu-box:8000/v1", Ports: [11434], Text: "x"}
    lines = []
    for section in SECTIONS:
        lines.append(f"[{section}]")
        for setting in (s for s in SETTINGS if s.section == section):
            value = setting.default
            if value is None and setting.kind.choices:
                value = setting.kind.choices[0]
            elif value is None:
                value = next(v for kind, v in examples.items() if isinstance(setting.kind, kind))
            lines.append(f"{setting.name} = {setting.kind.toml(value)}")
    path = tmp_path / "config.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run(capsys, "config", "--json", "--config", str(path))
    assert code == 0, err
    record = json.loads(out)
    for setting in SETTINGS:
        assert record[setting.section][setting.name]["source"] == "file", setting.key


# -- a bad value is one line and exit 2, whatever its source


def one_line_error(code: int, out: str, err: str) -> str:
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.strip()


def test_deeply_nested_toml_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    for text in ("a = " + "[" * 100_000, "a = " + "{b = " * 5_000 + "1" + "}" * 5_000):
        path = tmp_path / "deep.toml"
        path.write_text(text, encoding="utf-8")
        message = one_line_error(*run(capsys, "--config", str(path), "config"))
        assert message.startswith(f"htmlrag-chat: {path}: ")


@pytest.mark.parametrize("command", [["ask", "q"], ["models"], ["config"]])
def test_a_url_that_is_not_one_is_refused_from_each_source(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    command: list[str],
) -> None:
    cache = ["--cache", str(tmp_path / "c.sqlite3")]
    message = one_line_error(*run(capsys, *cache, *command, "--base-url", "not a url"))
    assert "--base-url" in message and "'not a url'" in message
    monkeypatch.setenv("HTMLRAG_CHAT_BASE_URL", "http://[::1")
    message = one_line_error(*run(capsys, *cache, *command))
    assert message.startswith("htmlrag-chat: HTMLRAG_CHAT_BASE_URL is not a URL")
    monkeypatch.delenv("HTMLRAG_CHAT_BASE_URL")
    config = tmp_path / "config.toml"
    config.write_text('[reader]\nbase_url = "http://[::1"\n', encoding="utf-8")
    message = one_line_error(*run(capsys, *cache, "--config", str(config), *command))
    assert message.startswith(f"htmlrag-chat: {config}: [reader] base_url is not a URL")
    assert not (tmp_path / "c.sqlite3").exists()  # refused before the cache was opened


def test_an_api_key_with_a_line_break_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HTMLRAG_CHAT_API_KEY", "sk-1\r\nX-Injected: yes")
    message = one_line_error(*run(capsys, "--cache", str(tmp_path / "c"), "ask", "q"))
    assert message.startswith("htmlrag-chat: HTMLRAG_CHAT_API_KEY must not hold control")
    assert "sk-1" not in message  # the key itself is never printed
    monkeypatch.delenv("HTMLRAG_CHAT_API_KEY")
    config = tmp_path / "config.toml"
    config.write_text('[reader]\napi_key = "sk-1\\r\\nX-Injected: yes"\n', encoding="utf-8")
    message = one_line_error(*run(capsys, "--config", str(config), "models"))
    assert message.startswith(f"htmlrag-chat: {config}: [reader] api_key must not hold")


def test_a_device_that_is_no_device_name_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    cache = tmp_path / "c.sqlite3"
    message = one_line_error(
        *run(capsys, "--cache", str(cache), "ask", "--device", "banana", "Who?")
    )
    assert message.startswith("htmlrag-chat: argument --device: must be auto, cpu, cuda")
    assert not cache.exists()  # no conversation left unanswered: nothing was opened


@pytest.mark.parametrize("endless", ["/dev/zero", "/dev/urandom"])
def test_an_endless_config_file_is_refused_unread(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, endless: str
) -> None:
    message = one_line_error(*run(capsys, "--config", endless, "config"))
    assert message == f"htmlrag-chat: {endless}: not a regular file (a device)"
    monkeypatch.setenv("HTMLRAG_CHAT_CONFIG", endless)
    assert one_line_error(*run(capsys, "config")) == message


def test_a_huge_config_file_is_read_to_a_cap(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_bytes(b"# " + b"x" * 2**21 + b"\n")
    message = one_line_error(*run(capsys, "--config", str(config), "config"))
    assert message == f"htmlrag-chat: {config}: over 1 MiB, not a settings file"


@pytest.mark.parametrize("line", ["max_tokens = -5", "context_tokens = -1"])
def test_values_the_options_refuse_are_refused_in_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, line: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[reader]\n{line}\n", encoding="utf-8")
    name, value = line.split(" = ")
    message = one_line_error(*run(capsys, "--config", str(config), "ask", "q"))
    assert message == f"htmlrag-chat: {config}: [reader] {name} must be 1 or more, not {value}"
    option = "--" + name.replace("_", "-")
    message = one_line_error(*run(capsys, "ask", option, value, "q"))
    assert f"argument {option}: must be 1 or more, not {value}" in message


def test_replay_followed_by_a_file_says_how_to_name_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in (["--replay", "demo.sqlite3", "ask", "q"], ["ask", "--replay", "demo.sqlite3"]):
        message = one_line_error(*run(capsys, *argv))
        assert message == (
            "htmlrag-chat: --replay takes no file: --replay=demo.sqlite3 or "
            "--replay-db demo.sqlite3"
        )


# -- documents and the web switch


def test_docs_repeat_and_the_web_switches_off_from_each_source(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    research = json.loads(run(capsys, "config", "--json")[1])["research"]
    assert research["docs"]["value"] == [] and research["web"]["value"] is True
    code, out, _ = run(capsys, "config", "--json", "--docs", "~/notes", "--docs", "b,c", "--no-web")
    research = json.loads(out)["research"]
    assert code == 0 and research["web"] == {"value": False, "source": "option", "name": "--web"}
    assert research["docs"]["value"] == [str(Path.home() / "notes"), "b,c"]  # commas are a name's
    monkeypatch.setenv("HTMLRAG_CHAT_DOCS", f"/a{os.pathsep}/b")
    monkeypatch.setenv("HTMLRAG_CHAT_WEB", "off")
    research = json.loads(run(capsys, "config", "--json")[1])["research"]
    assert research["docs"]["value"] == ["/a", "/b"] and research["web"]["value"] is False
    assert json.loads(run(capsys, "config", "--json", "--web")[1])["research"]["web"]["value"]
    monkeypatch.setenv("HTMLRAG_CHAT_WEB", "sometimes")
    message = one_line_error(*run(capsys, "config"))
    assert (
        message == "htmlrag-chat: HTMLRAG_CHAT_WEB must be true or false (1 or 0), not 'sometimes'"
    )
    monkeypatch.delenv("HTMLRAG_CHAT_WEB")
    path = tmp_path / "config.toml"
    path.write_text('[research]\nweb = "no"\n', encoding="utf-8")
    message = one_line_error(*run(capsys, "--config", str(path), "config"))
    assert message.endswith("[research] web must be true or false, not 'no'")
