"""The settings tree: its defaults pass their own checks and survive a trip through TOML,
and docs/settings.md lists exactly the declared settings."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from htmlrag_chat.commands.options import REGISTRATIONS
from htmlrag_chat.settings.kinds import Integer, Seconds
from htmlrag_chat.settings.tree import SETTINGS, Setting, find

DOC = Path(__file__).resolve().parents[2] / "docs" / "settings.md"
START, END = "<!-- settings table:", "<!-- end of settings table -->"
assert REGISTRATIONS  # imported: the settings the registrations declare are in the tree


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.key)
def test_a_default_is_a_value_its_kind_accepts_and_toml_gives_it_back(setting: Setting) -> None:
    if setting.default is None:
        return
    assert setting.kind.check(setting.default) == setting.default
    written = tomllib.loads(f"x = {setting.kind.toml(setting.default)}")["x"]
    assert setting.kind.check(written) == setting.default


def test_a_setting_is_found_by_key_or_by_name() -> None:
    assert find("reader.model") is find("model") is find("reader.model")
    assert find("max-tokens").key == "reader.max_tokens"
    with pytest.raises(KeyError, match=r"no setting 'reader\.temperature'"):
        find("reader.temperature")


def table() -> str:
    def shown(setting: Setting) -> str:
        value = setting.default
        if value is None:
            return "-"
        if isinstance(value, tuple):
            return "`" + ",".join(value) + "`" if value else "none"
        return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"

    def bounds(setting: Setting) -> str:
        kind = setting.kind
        if isinstance(kind, Integer):
            return f"{kind.least}-{kind.most:,}"
        return f"above 0, at most {kind.most:g}" if isinstance(kind, Seconds) else "-"

    rows = [
        "| setting | default | range | option (commands) | variable | what |",
        "|---|---|---|---|---|---|",
    ]
    for s in SETTINGS:
        short = f"{s.short}, " if s.short else ""
        option = f"`{short}{s.option}` ({', '.join(s.commands)})" if s.commands else "-"
        variables = ", ".join(f"`{name}`" for name in s.env)
        cells = (f"`{s.key}`", shown(s), bounds(s), option, variables, s.described)
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def test_the_documented_table_is_the_declared_settings() -> None:
    text = DOC.read_text(encoding="utf-8")
    documented = text[text.index(START) :].split("\n", 1)[1].split(END)[0].strip()
    assert documented == table(), f"docs/settings.md should list:\n{table()}"


def test_each_section_fills_a_dataclass_with_a_field_per_setting_and_its_default() -> None:
    """What a new setting needs besides its entry: the field that carries it, defaulting
    to the tree's value (so the number is written once)."""
    from dataclasses import fields

    from htmlrag_chat.assembly.wiring import AgentOptions, PruneSettings
    from htmlrag_chat.mcp.auth import McpSettings
    from htmlrag_chat.reader.registry import BACKENDS
    from htmlrag_chat.reader.settings import ReaderSettings
    from htmlrag_chat.sources.registry import SOURCES
    from htmlrag_chat.web.search import SearchSettings

    holders = {
        "reader": ReaderSettings,
        "prune": PruneSettings,
        "search": SearchSettings,
        "research": AgentOptions,
        "web": AgentOptions,
        "mcp": McpSettings,
    }
    backends = {s.key for backend in BACKENDS for s in backend.settings}
    sources = {entry.setting.key for entry in SOURCES}
    for setting in SETTINGS:
        if setting.key in backends:  # a reader backend's own: in ``options``, by name
            assert ReaderSettings().option(setting.name) == setting.default, setting.key
            continue
        if setting.key in sources:  # a page source's own: in ``AgentOptions.sources``
            assert AgentOptions().source(setting.name) == setting.default, setting.key
            continue
        defaults = {f.name: f.default for f in fields(holders[setting.section])}
        assert setting.name in defaults, f"add {setting.name} to {holders[setting.section]}"
        assert defaults[setting.name] == setting.default, setting.key


NUMBERS = [s for s in SETTINGS if isinstance(s.kind, Integer | Seconds)]


@pytest.mark.parametrize("setting", NUMBERS, ids=lambda s: s.key)
def test_every_number_is_bounded_where_it_is_declared(setting: Setting) -> None:
    """The bound is finite and its own value passes; past it, from the file (TOML's types)
    or as text (an option, a variable, ``config set``), the value is refused in one line."""
    kind = setting.kind
    assert isinstance(kind, Integer | Seconds)
    most = kind.most
    assert math.isfinite(most) and kind.check(most) == most
    if setting.default is not None:
        assert setting.default <= most
    huge: list[object] = [most * 2, 10**30] if isinstance(kind, Integer) else [most * 2, 1e308]
    for value in huge:
        with pytest.raises(ValueError, match=r"or less|at most") as refused:
            kind.check(value)
        assert "\n" not in str(refused.value)
    texts = ["1e308", "inf", "nan", str(10**30), "9" * 5000]
    for text in texts:
        with pytest.raises(ValueError) as refused:
            kind.parse(text)
        assert "\n" not in str(refused.value) and len(str(refused.value)) < 200


@pytest.mark.parametrize("setting", NUMBERS, ids=lambda s: s.key)
def test_a_huge_number_from_the_environment_is_one_line_and_exit_2(
    setting: Setting, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from htmlrag_chat.cli import main

    monkeypatch.setenv("XDG_CONFIG_HOME", "/nonexistent")
    monkeypatch.delenv("HTMLRAG_CHAT_CONFIG", raising=False)
    monkeypatch.setenv(setting.env[0], "1e308" if isinstance(setting.kind, Seconds) else "10" * 16)
    assert main(["config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"htmlrag-chat: {setting.env[0]} must be")
