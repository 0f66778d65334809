"""``models``: which model each role uses, where it is, whether it is here; ``models pull``.

The listing loads nothing (``inventory.py``), so it answers at once, offline too: a missing
model is a row that says so, not an error. ``pull`` downloads through huggingface_hub into
its usual cache, where the app then finds it.
"""

from __future__ import annotations

import argparse
import json
import sys

from htmlrag_chat.commands.common import add_command
from htmlrag_chat.commands.options import add_setting_options, agent_options
from htmlrag_chat.errors import EXIT_OK, UserError
from htmlrag_chat.hub import download, download_file, require_hub
from htmlrag_chat.inventory import ROLES, Inventory, take_inventory
from htmlrag_chat.listing import ModelRow, folder_bytes
from htmlrag_chat.reader import DEFAULT_READER_MODEL
from htmlrag_chat.reader.choice import hub_file, is_hub_id
from htmlrag_chat.safety import one_line
from htmlrag_chat.scoring import MULTILINGUAL_EMBED_MODEL

_WHERE = {
    "folder": "folder",
    "hf-cache": "Hugging Face cache",
    "bundled": "bundled package",
    "built-in": "built in",
    "hub": "hub (not downloaded)",
    "nowhere": "no such folder",
    "gguf": "GGUF file",
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
        print(json.dumps(inventory.to_json(), ensure_ascii=False, indent=2))
    else:
        print(render(inventory))
    return EXIT_OK


def render(inventory: Inventory) -> str:
    """A table, one row per role, then the notes and the servers found."""
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
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() for line in table
    ]
    lines += [f"{row.role}: {row.note}" for row in inventory.rows if row.note]
    if inventory.device_note:
        lines.append(f"device: {inventory.device_note}")
    for server in inventory.servers:
        models = ", ".join(one_line(model) for model in server.models) or "no models"
        lines.append(f"server: {server.describe()}: {models}")
    missing = [row.role for row in inventory.rows if downloadable(row)]
    if missing:
        lines.append(f"download: htmlrag-chat models pull [{'|'.join(missing)}]")
    return "\n".join(lines)


def downloadable(row: ModelRow) -> bool:
    """A hub model the settings use that is not here, or only partly."""
    return row.used and not row.present and row.where in ("hub", "hf-cache")


def where(row: ModelRow) -> str:
    if row.where == "server":
        return f"server {row.location}" if row.location else "server (no --base-url)"
    return _WHERE.get(row.where, row.where)


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


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
    require_hub()
    for role, repo_id in targets:
        print(f"downloading {repo_id} ({role})", file=sys.stderr)
        one_file = hub_file(repo_id)
        if one_file is not None:  # a GGUF quant: one file of its repo
            path = download_file(*one_file)
            print(f"{repo_id}: {human_size(path.stat().st_size)} in {path}")
            continue
        folder = download(repo_id, tokenizer_only=role == "tokenizer")
        print(f"{repo_id}: {human_size(folder_bytes(folder))} in {folder}")
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
