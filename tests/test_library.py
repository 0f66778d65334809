"""The documents source: files read into a real cache file once and again only when they
change, failures said once and not parsed again, the best documents chosen per query, and a
read-only cache left alone."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sys
from pathlib import Path

import pytest

from htmlrag_chat import library as library_module
from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import Event, Notice, Progress, StageFinished
from htmlrag_chat.base.extras import install_line
from htmlrag_chat.library import DocumentLibrary
from htmlrag_chat.store.db import Store

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "documents", tmp_path / "docs")
    return tmp_path / "docs"


@pytest.fixture
def store(tmp_path: Path):
    with Store.open(tmp_path / "cache.sqlite3") as opened:
        yield opened


class Events(list[Event]):
    def __call__(self, event: Event) -> None:
        self.append(event)

    def counts(self) -> dict[str, int]:
        (finished,) = [e for e in self if isinstance(e, StageFinished) and e.stage == "documents"]
        return finished.counts

    def notes(self) -> list[str]:
        return [e.message for e in self if isinstance(e, Notice)]

    def progress(self) -> list[tuple[int, int, int]]:
        return [(e.done, e.total, e.failed) for e in self if isinstance(e, Progress)]


def find(library: DocumentLibrary, query: str = "notes", limit: int = 10) -> tuple[list, Events]:
    events = Events()
    return library.find([query], limit, events), events


def test_documents_are_read_once_then_only_when_they_change(folder: Path, store: Store) -> None:
    library = DocumentLibrary.of([str(folder)], store)
    pages, events = find(library)
    assert events.counts() == dict(
        files=4, cached=0, read=4, unchanged=0, failed=0, chosen=4
    )  # fmt: skip
    assert events.progress()[0] == (1, 4, 0) and events.progress()[-1] == (4, 4, 0)
    assert {page.title for page in pages} == {
        "Lighthouse keeper's diary", "Beekeeping log", "boatshed.txt", "Orchard notes",
    }  # fmt: skip

    pages, events = find(DocumentLibrary.of([str(folder)], store))  # the next question
    assert events.counts() == dict(files=4, cached=4, read=0, unchanged=0, failed=0, chosen=4)
    assert events.progress() == []  # nothing to read: no progress line

    note = folder / "notes" / "beekeeping.md"
    os.utime(note, ns=(note.stat().st_atime_ns, note.stat().st_mtime_ns + 10**9))  # touched
    _, events = find(library)
    assert events.counts()["unchanged"] == 1 and events.counts()["read"] == 0
    note.write_text(note.read_text() + "\nThe red hive was requeened in June.\n")
    pages, events = find(library)
    assert events.counts()["read"] == 1 and events.counts()["cached"] == 3
    (changed,) = [page for page in pages if page.source.endswith("beekeeping.md")]
    assert b"requeened in June" in changed.data


def test_a_document_is_a_page_with_a_file_url_title_and_modified_day(
    folder: Path, store: Store
) -> None:
    pdf = folder / "orchard.pdf"
    os.utime(pdf, (0, dt.datetime(2024, 3, 9, 12).timestamp()))
    pages, _ = find(DocumentLibrary.of([str(pdf)], store))
    (page,) = pages
    assert page.source == pdf.resolve().as_uri() and page.source.startswith("file:///")
    assert (page.title, page.date, page.charset) == ("Orchard notes", "2024-03-09", "utf-8")
    assert b"Margit Halvorsen" in page.data and page.data.startswith(b"<html")


def test_a_broken_file_is_said_once_and_not_parsed_again(folder: Path, store: Store) -> None:
    shutil.copy(FIXTURES / "locked.pdf", folder / "locked.pdf")
    (folder / "scan.docx").write_bytes(b"PK\x03\x04")
    (folder / "empty.md").write_text("\n")
    library = DocumentLibrary.of([str(folder)], store)
    pages, events = find(library)
    assert len(pages) == 4
    assert events.counts()["failed"] == 2
    assert sorted(events.notes()) == [
        f"document not used: {folder.resolve() / 'empty.md'}: no text in it",
        f"document not used: {folder.resolve() / 'locked.pdf'}: encrypted (it needs a password)",
        "left out 1 file(s) of types not read (HTML, Markdown, text and PDF are): .docx 1",
    ]
    assert events.progress()[-1] == (6, 6, 2)
    _, events = find(library)  # the same session: said already
    assert events.notes() == [] and events.counts()["read"] == 0
    _, events = find(DocumentLibrary.of([str(folder)], store))  # the next question says it
    assert len(events.notes()) == 3 and events.counts()["read"] == 0


def test_a_file_that_cannot_be_opened_is_tried_again_next_time(
    folder: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = library_module.read_file

    def unreadable(path: Path, kind: str) -> bytes:  # as root, no permission bit stops a read
        if path.name == "boatshed.txt":
            raise InputError(f"{path}: Permission denied")
        return real(path, kind)

    monkeypatch.setattr(library_module, "read_file", unreadable)
    library = DocumentLibrary.of([str(folder)], store)
    pages, events = find(library)
    assert len(pages) == 3 and events.notes() == [
        f"document not used: {folder.resolve() / 'notes' / 'boatshed.txt'}: Permission denied"
    ]
    monkeypatch.setattr(library_module, "read_file", real)
    pages, events = find(library)
    assert len(pages) == 4 and events.counts()["read"] == 1


def test_pdfs_without_their_extra_are_left_out_with_one_line(
    folder: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(folder / "orchard.pdf", folder / "orchard-copy.pdf")
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as if not installed
    pages, events = find(DocumentLibrary.of([str(folder)], store))
    assert len(pages) == 2 + 1  # the PDFs left out
    (note,) = events.notes()
    assert note.startswith("2 PDF file(s) left out: reading PDF files needs pypdfium2")
    assert note.endswith(install_line("pdf"))


def test_the_best_documents_are_chosen_when_there_are_more_than_a_round_reads(
    folder: Path, store: Store
) -> None:
    library = DocumentLibrary.of([str(folder)], store)
    events = Events()
    pages = library.find(["who planted the quince tree", "paraffin lamp"], 2, events)
    assert [Path(page.source).name for page in pages] == ["orchard.pdf", "lighthouse.html"]
    pages = library.find(["quince"], 2, events)
    assert [Path(page.source).name for page in pages] == ["orchard.pdf"]  # none else holds it
    assert library.find(["zeppelin"], 2, events) == []


def test_a_read_only_cache_is_left_alone_and_the_side_file_keeps_documents(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    side = tmp_path / "derived.sqlite3"
    monkeypatch.setenv("HTMLRAG_CHAT_DERIVED", str(side))
    Store.open(tmp_path / "recording.sqlite3").close()
    before = (tmp_path / "recording.sqlite3").read_bytes()
    with Store.open(tmp_path / "recording.sqlite3", readonly=True) as replay:
        pages, events = find(DocumentLibrary.of([str(folder)], replay))
        assert len(pages) == 4
        _, events = find(DocumentLibrary.of([str(folder)], replay))
        assert events.counts()["cached"] == 4
    assert (tmp_path / "recording.sqlite3").read_bytes() == before
    with Store.open(side) as kept:
        assert kept.stats()["documents"] == 4
    side.unlink()
    side.mkdir()  # a side file that cannot be used: the round reads them in memory
    with Store.open(tmp_path / "recording.sqlite3", readonly=True) as replay:
        pages, events = find(DocumentLibrary.of([str(folder)], replay))
    assert len(pages) == 4 and "cannot be used" in events.notes()[0]


def test_nothing_is_written_beside_the_documents(folder: Path, store: Store) -> None:
    listing = sorted(path.relative_to(folder) for path in folder.rglob("*"))
    find(DocumentLibrary.of([str(folder)], store))
    assert sorted(path.relative_to(folder) for path in folder.rglob("*")) == listing


def test_progress_comes_a_quarter_second_apart_and_for_the_last_file(
    folder: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(range(0, 1000, 15))  # each reading of the clock 0.15 s after the last
    monkeypatch.setattr(library_module.time, "monotonic", lambda: next(clock) / 100)
    _, events = find(DocumentLibrary.of([str(folder)], store))
    assert events.progress() == [(1, 4, 0), (3, 4, 0), (4, 4, 0)]
