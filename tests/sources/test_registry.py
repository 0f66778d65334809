"""The seam of the sources the user names (``sources/registry.py``): a source defined here, a
folder of plain-text notes, is one class and one registration, and with no other edit it
is an option of ``ask`` with its help, a row of ``config``, part of the "nothing to read"
line, checked before anything loads, what ``ask --no-web`` answers from (the extractive
reader, a real SQLite cache file, every socket refused) and named in the chat app's
welcome. The settings the sources declare join the tree in a fresh interpreter too,
through the entry point alone."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import EventSink
from htmlrag_chat.cli import main
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.settings import tree
from htmlrag_chat.settings.kinds import Paths
from htmlrag_chat.settings.tree import ANSWERING, Setting
from htmlrag_chat.sources import registry
from htmlrag_chat.sources.source import Asking, Chosen, PageSource, SourceEntry
from htmlrag_chat.tui.texts import welcome

QUESTION = "Which port does the staging database listen on?"
NOTE = "The staging database listens on port 6543 since the March migration."


@dataclass
class NotesFolder(PageSource):
    """Plain-text notes (``NAME.txt``), each a page titled by its name."""

    name = "notes"

    folder: Path

    def gather(self, asking: Asking) -> Chosen:
        return Chosen(self, asking)

    def find(self, queries: Sequence[str], limit: int, emit: EventSink) -> list[PageInput]:
        pages = []
        for path in sorted(self.folder.glob("*.txt"))[:limit]:
            text = html.escape(path.read_text(encoding="utf-8"))
            page = f"<html><body><h1>{html.escape(path.stem)}</h1><p>{text}</p></body></html>"
            pages.append(PageInput(path.as_uri(), page.encode(), title=path.stem))
        return pages


def notes_folder(paths: Sequence[str]) -> NotesFolder:
    """The one folder ``--notes`` names; anything else is an error before any question."""
    folder = Path(paths[0])
    if len(paths) != 1 or not folder.is_dir():
        raise InputError(f"--notes {paths[0]}: not a folder of notes")
    return NotesFolder(folder)


NOTES = SourceEntry(
    Setting(
        "research", "notes", Paths(), (), "your plain-text notes (NAME.txt) as pages",
        ANSWERING, example=("~/notes",),
    ),
    called="your notes",
    listed="notes",
    check=notes_folder,
    build=lambda paths, store: notes_folder(paths),
)  # fmt: skip


@pytest.fixture
def notes_registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``NOTES`` registered for the test; the sources and the settings tree as they were
    after it."""
    kept = list(tree.SETTINGS), dict(tree.BY_KEY), dict(tree.BY_NAME)
    monkeypatch.setattr(registry, "SOURCES", list(registry.SOURCES))
    registry.register(NOTES)  # the registration
    yield
    tree.SETTINGS[:] = kept[0]
    for now, before in ((tree.BY_KEY, kept[1]), (tree.BY_NAME, kept[2])):
        now.clear()
        now.update(before)


def test_a_source_is_a_class_and_one_registration(
    notes_registered: None,
    no_network: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["ask", "--help"])
    assert done.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "--notes PATH" in shown and "your plain-text notes (NAME.txt) as pages" in shown

    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "staging.txt").write_text(NOTE, encoding="utf-8")
    assert main(["config", "--json", "--notes", str(folder)]) == 0
    row = json.loads(capsys.readouterr().out)["research"]["notes"]
    assert row["value"] == [str(folder)]

    cache = ["--cache", str(tmp_path / "c.db")]
    asked = [*cache, "ask", QUESTION, "--no-web", "--reader", "extractive", "--pruner", "bm25"]
    assert main(asked) == 2
    err = capsys.readouterr().err
    assert "or your notes with --notes PATH" in err and len(err.strip().splitlines()) == 1
    assert main([*asked, "--notes", str(tmp_path / "gone")]) == 3
    assert f"--notes {tmp_path / 'gone'}: not a folder of notes" in capsys.readouterr().err

    assert main([*asked, "--notes", str(folder), "--json"]) == 0
    captured = capsys.readouterr()
    record = json.loads(captured.out)
    assert "6543" in record["answer"] and record["cited"]
    assert [source["url"] for source in record["sources"]] == [(folder / "staging.txt").as_uri()]
    assert (tmp_path / "c.db").is_file()  # a real cache file, the exchange kept in it
    assert "search" not in record["timings_ms"]

    # The chat app says what a question reads in the source's own words.
    options = AgentOptions(sources={"notes": (str(folder),)}, web=False)
    said = " ".join(welcome(options, kept=True).split())
    assert "reads your notes (not the web)" in said and f"notes: {folder} only" in said


def test_the_command_line_sees_the_settings_the_sources_declare() -> None:
    """In a fresh interpreter, the entry point alone brings --docs and --saved in, and not
    the store they read with (sqlite-utils, and the numpy it imports: a quarter-second more
    on every command's start, ``--help`` and completion included)."""
    code = (
        "import sys\n"
        "import htmlrag_chat.cli\n"
        "from htmlrag_chat.settings.tree import BY_KEY\n"
        "print('research.docs' in BY_KEY, 'research.saved' in BY_KEY)\n"
        "print(sorted({'sqlite_utils', 'numpy'} & set(sys.modules)))\n"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert shown.stdout.splitlines() == ["True True", "[]"], shown.stderr
