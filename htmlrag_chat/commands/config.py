"""``config``: the effective settings and where each value came from (default, the config
file, an environment variable, an option), so "why is it using the extractive reader?" has
an answer without reading code; ``config path`` prints the settings file's path,
``config set KEY VALUE`` changes one setting in it and ``config init`` writes one with
every setting commented out at its default (``settings/edit.py``).

It takes the same options as ``ask`` and the chat app, so ``config --reader openai`` shows
what those options would make of the file and the environment. The API key is never
printed, only where it comes from.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from htmlrag_chat.base.errors import EXIT_OK
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.commands.common import (
    REPLAY,
    REPLAY_DB,
    add_command,
    cache_origin,
    error,
    print_json,
    print_table,
    replaying,
    store_options,
)
from htmlrag_chat.commands.options import add_config_option, add_setting_options, settings_of
from htmlrag_chat.settings.edit import init, set_value
from htmlrag_chat.settings.layered import DEFAULT, Origin, Resolved, config_origin
from htmlrag_chat.settings.tree import BY_KEY

if TYPE_CHECKING:
    from htmlrag_chat.reader.backend import ReaderPlan

HIDDEN = "<hidden>"  # what is shown for a secret that is set
EXAMPLES = (
    ("htmlrag-chat config", "each setting in effect and where it comes from"),
    ("htmlrag-chat config set reader.base_url http://localhost:11434/v1", "use this server"),
    ("htmlrag-chat config init", "write a settings file with every setting at its default"),
)


def add_commands(commands: argparse._SubParsersAction) -> None:
    config = add_command(
        commands, "config", "show the settings in effect and where each one comes from",
        run_config, [store_options(argparse.SUPPRESS)], EXAMPLES,
    )  # fmt: skip
    add_setting_options(config, "config")
    config.add_argument("--json", action="store_true", help="print one JSON object")
    actions = config.add_subparsers(title="actions (none: show the settings)", metavar="ACTION")
    path = add_command(
        actions, "path", "print the settings file's path", run_path,
        examples=[("htmlrag-chat config path", "where the settings file is looked for"),
                  ('"$EDITOR" "$(htmlrag-chat config path)"', "edit it")],
    )  # fmt: skip
    add_config_option(path)
    change = add_command(
        actions, "set", "change one setting in the settings file (checked first)", run_set,
        examples=[("htmlrag-chat config set research.rounds 1", "one search round"),
                  ("htmlrag-chat config set model qwen2.5:7b", "a name alone will do")],
    )  # fmt: skip
    change.add_argument(
        "key", metavar="KEY",
        help="section.name, as htmlrag-chat config --json lists them",
    )  # fmt: skip
    change.add_argument("value", metavar="VALUE", help="the new value, checked as options are")
    add_config_option(change)
    start = add_command(
        actions, "init", "write a settings file with every setting commented out", run_init,
        examples=[("htmlrag-chat config init", "at htmlrag-chat config path"),
                  ("htmlrag-chat config init --config ./project.toml", "somewhere else")],
    )  # fmt: skip
    start.add_argument("--force", action="store_true", help="replace an existing file")
    add_config_option(start)


def run_config(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    cache, where = cache_origin(args)
    file = settings.file
    record: dict[str, dict[str, object]] = {
        "config_file": {
            "path": str(file),
            "exists": file.is_file(),
            **_origin(settings.file_origin),
        },
        "cache": {"path": str(cache), **_origin(where)},
        "replay": {"value": replaying(args), **_origin(_replay_origin(args))},
    }
    rows = [
        [
            "config file",
            f"{file}{'' if file.is_file() else ' (not found)'}",
            str(settings.file_origin),
        ],
        ["cache", str(cache), str(where)],
        ["replay", "yes" if replaying(args) else "no", str(_replay_origin(args))],
    ]
    for key, value in settings.values.items():
        setting = BY_KEY[key]
        shown = HIDDEN if setting.secret and value is not None else value
        origin = settings.origins[key]
        record.setdefault(setting.section, {})[setting.name] = {"value": shown, **_origin(origin)}
        rows.append([setting.name, _shown(shown), str(origin)])
    plan = reader_plan(settings)
    record["answers_with"] = {"kind": plan.backend.name, "model": plan.model, "why": plan.why}
    rows.append(["answers with", plan.label, "the reader plan, now"])
    if args.json:
        print_json(record, indent=2)
    else:
        print_table(("SETTING", "VALUE", "FROM"), [[one_line(c) for c in row] for row in rows])
    return EXIT_OK


def reader_plan(settings: Resolved) -> ReaderPlan:
    """The reader ``ask`` would answer with under these settings, as ``models`` and the
    palette name it (``reader.registry``): the servers are asked, nothing is loaded."""
    from htmlrag_chat.reader.registry import look_around, plan_reader
    from htmlrag_chat.reader.settings import ReaderSettings

    reader = ReaderSettings.of(settings.section("reader"))
    return plan_reader(reader, look_around(reader))


def run_path(args: argparse.Namespace) -> int:
    print(config_origin(getattr(args, "config", None))[0])
    return EXIT_OK


def run_set(args: argparse.Namespace) -> int:
    path = config_origin(getattr(args, "config", None))[0]
    change = set_value(path, args.key, args.value)
    shown = HIDDEN if change.setting.secret else _shown(change.value)
    print(f"{change.setting.key} = {one_line(shown)} in {path}")
    if change.note is not None:
        error(f"note: {change.note}")
    return EXIT_OK


def run_init(args: argparse.Namespace) -> int:
    path = config_origin(getattr(args, "config", None))[0]
    init(path, force=args.force)
    print(path)
    return EXIT_OK


def _replay_origin(args: argparse.Namespace) -> Origin:
    if getattr(args, "replay_db", None) is not None:
        return Origin("option", REPLAY_DB)
    return Origin("option", REPLAY) if getattr(args, "replay", False) else DEFAULT


def _origin(origin: Origin) -> dict[str, str | None]:
    return {"source": origin.source, "name": origin.name}


def _shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, tuple):
        return ",".join(str(item) for item in value) or "(none)"
    return f"{value:g}" if isinstance(value, float) else str(value)
