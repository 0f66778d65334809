"""``config``: the effective settings and where each value came from (default, the config
file, an environment variable, an option), so "why is it using the extractive reader?" has
an answer without reading code. ``config path`` prints the settings file's path.

It takes the same reader options as ``ask`` and the chat app, so ``config --reader openai``
shows what those options would make of the file and the environment. The API key is never
printed, only where it comes from.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from htmlrag_chat.commands.ask import reader_options, reader_overrides
from htmlrag_chat.commands.common import (
    REPLAY,
    REPLAY_DB,
    add_command,
    cache_origin,
    print_table,
    replaying,
    store_options,
)
from htmlrag_chat.config import (
    DEFAULT,
    Origin,
    config_origin,
    resolve_deadline,
    resolve_reader_settings,
    resolve_search_settings,
)
from htmlrag_chat.errors import EXIT_OK
from htmlrag_chat.safety import one_line
from htmlrag_chat.web.settings import declared, search_options, search_overrides

HIDDEN = "<hidden>"  # what is shown for a secret that is set
# Options ``config`` accepts (they may come before the command) but does not show.
IGNORED = ("rounds", "pages", "pruner", "budget", "embed_model", "gen_model", "tokenizer")


def add_commands(commands: argparse._SubParsersAction) -> None:
    suppress = argparse.SUPPRESS
    config = add_command(
        commands, "config", "show the settings in effect and where each one comes from",
        run_config,
        [store_options(suppress), reader_options(suppress, hidden=IGNORED),
         search_options(suppress)],
    )  # fmt: skip
    config.add_argument("--json", action="store_true", help="print one JSON object")
    actions = config.add_subparsers(title="actions (none: show the settings)", metavar="ACTION")
    path = add_command(actions, "path", "print the settings file's path", run_path)
    path.add_argument("--config", type=Path, default=suppress, help="settings file")


def run_config(args: argparse.Namespace) -> int:
    file, file_origin = config_origin(args.config)
    cache, where = cache_origin(args)
    settings, origins = resolve_reader_settings(args.config, reader_overrides(args))
    values = vars(settings) | {"api_key": HIDDEN if settings.api_key else None}
    search = _search(args)
    deadline, deadline_origin = resolve_deadline(args.config)
    if getattr(args, "deadline", None) is not None:
        deadline, deadline_origin = args.deadline, Origin("option", "--deadline")
    record = {
        "config_file": {"path": str(file), "exists": file.is_file(), **_origin(file_origin)},
        "cache": {"path": str(cache), **_origin(where)},
        "replay": {"value": replaying(args), **_origin(_replay_origin(args))},
        "reader": {key: {"value": values[key], **_origin(origins[key])} for key in values},
        "web": {"deadline": {"value": deadline, **_origin(deadline_origin)}},
        "search": {
            key: {"value": value, **_origin(origin)} for key, (value, origin) in search.items()
        },
    }
    if args.json:
        print(json.dumps(record, ensure_ascii=False, indent=2))
        return EXIT_OK
    found = "" if record["config_file"]["exists"] else " (not found)"
    rows = [
        ["config file", f"{file}{found}", _source(file_origin)],
        ["cache", str(cache), _source(where)],
        ["replay", "yes" if replaying(args) else "no", _source(_replay_origin(args))],
    ]
    rows += [[key, _shown(values[key]), _source(origins[key])] for key in values]
    rows.append(["deadline", f"{deadline:g} s", _source(deadline_origin)])
    rows += [[key, _shown(value), _source(origin)] for key, (value, origin) in search.items()]
    print_table(("SETTING", "VALUE", "FROM"), [[one_line(c) for c in row] for row in rows])
    return EXIT_OK


def _search(args: argparse.Namespace) -> dict[str, tuple[object, Origin]]:
    """The search settings with their origins; a key shows only whether it is set."""
    settings, origins = resolve_search_settings(args.config, search_overrides(args))
    shown = {}
    for setting in declared():
        value = getattr(settings, setting.name)
        if setting.metadata["secret"]:
            value = HIDDEN if value else None
        elif isinstance(value, tuple):
            value = list(value)
        shown[setting.name] = (value, origins[setting.name])
    return shown


def run_path(args: argparse.Namespace) -> int:
    print(config_origin(getattr(args, "config", None))[0])
    return EXIT_OK


def _replay_origin(args: argparse.Namespace) -> Origin:
    if getattr(args, "replay_db", None) is not None:
        return Origin("option", REPLAY_DB)
    return Origin("option", REPLAY) if getattr(args, "replay", False) else DEFAULT


def _origin(origin: Origin) -> dict[str, str | None]:
    return {"source": origin.source, "name": origin.name}


def _source(origin: Origin) -> str:
    return origin.source if origin.name is None else f"{origin.source} {origin.name}"


def _shown(value: object) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    return "-" if value is None else str(value)
