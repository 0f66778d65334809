"""The documents source: files read into a real cache file once and again only when they
change, failures said once and not parsed again, the best documents chosen per query, and a
read-only cache left alone."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import Event, Notice, Progress, StageFinished
from htmlrag_chat.documents import pdf as pdf_module
from htmlrag_chat.documents.walk import FoundFile
from htmlrag_chat.modelio.extras import install_line
from htmlrag_chat.sources import library as library_module
from htmlrag_chat.sources.library import DocumentLibrary
from htmlrag_chat.store.db import Store
from tests.documents.test_pdf import LINE, shared_stream_pdf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


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


def sql(path: Path, statement: str) -> list[tuple]:
    """One statement on the cache file, through a connection of the test's own."""
    connection = sqlite3.connect(path)
    try:
        return connection.execute(statement).fetchall()
    finally:
        connection.close()


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
    (folder / "scan.odt").write_bytes(b"PK\x03\x04")
    (folder / "empty.md").write_text("\n")
    library = DocumentLibrary.of([str(folder)], store)
    pages, events = find(library)
    assert len(pages) == 4
    assert events.counts()["failed"] == 2
    assert sorted(events.notes()) == [
        f"document not used: {folder.resolve() / 'empty.md'}: no text in it",
        f"document not used: {folder.resolve() / 'locked.pdf'}: encrypted (it needs a password)",
        "left out 1 file(s) of types not read (HTML, Markdown, text, PDF and Word are): .odt 1",
    ]
    assert events.progress()[-1] == (6, 6, 2)
    _, events = find(library)  # the same session: said already
    assert events.notes() == [] and events.counts()["read"] == 0
    _, events = find(DocumentLibrary.of([str(folder)], store))  # the next question says it
    assert len(events.notes()) == 3 and events.counts()["read"] == 0


def test_a_file_that_cannot_be_opened_is_tried_again_next_time(
    folder: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = library_module.read_document

    def unreadable(file: FoundFile) -> bytes:  # as root, no permission bit stops a read
        if file.path.name == "boatshed.txt":
            raise InputError(f"{file.path}: Permission denied")
        return real(file)

    monkeypatch.setattr(library_module, "read_document", unreadable)
    library = DocumentLibrary.of([str(folder)], store)
    pages, events = find(library)
    assert len(pages) == 3 and events.notes() == [
        f"document not used: {folder.resolve() / 'notes' / 'boatshed.txt'}: Permission denied"
    ]
    monkeypatch.setattr(library_module, "read_document", real)
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


def test_a_name_that_is_not_utf8_is_kept_under_a_lossless_key_and_answered(
    folder: Path, store: Store
) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # from an old archive: Latin-1
    (folder / name).write_text("The espresso machine is descaled on Fridays.\n")
    (folder / os.fsdecode(b"empty\xff.md")).write_text("\n")
    pages, events = find(DocumentLibrary.of([str(folder)], store))
    assert len(pages) == 5  # the four others too
    (cafe,) = [page for page in pages if b"espresso" in page.data]
    assert cafe.source == (folder.resolve() / name).as_uri()
    assert cafe.source.endswith("/caf%E9.txt") and cafe.title == "caf\\xe9.txt"
    assert events.notes() == [f"document not used: {folder.resolve()}/empty\\xff.md: no text in it"]
    pages, events = find(DocumentLibrary.of([str(folder)], store))  # from the cache
    assert len(pages) == 5 and events.counts()["cached"] == 6
    keys = [row[0] for row in sql(store.path, "SELECT path FROM documents")]
    assert (folder.resolve() / name).as_uri() in keys and str(
        folder.resolve() / "orchard.pdf"
    ) in keys


@pytest.fixture
def tmpfs(tmp_path: Path):
    """A folder on tmpfs, which keeps any modification time (ext4 stops at 2446)."""
    made = Path(tempfile.mkdtemp(dir="/dev/shm"))
    yield made
    shutil.rmtree(made)


@pytest.mark.parametrize(
    "seconds",
    [15_032_385_535, 300_000_000_000, -300_000_000_000],
    ids=["past-2262", "past-9999", "before-year-1"],
)
def test_a_modification_time_no_row_or_calendar_holds_is_clamped(
    tmpfs: Path, store: Store, seconds: int
) -> None:
    shutil.copytree(FIXTURES / "documents", tmpfs / "docs")
    note = tmpfs / "docs" / "notes" / "beekeeping.md"
    os.utime(note, ns=(seconds * 10**9, seconds * 10**9))
    assert note.stat().st_mtime_ns == seconds * 10**9  # kept as set
    library = DocumentLibrary.of([str(tmpfs / "docs")], store)
    pages, events = find(library)
    assert len(pages) == 4 and events.counts()["failed"] == 0
    (page,) = [page for page in pages if page.source.endswith("beekeeping.md")]
    # The day it was modified, where a calendar has it (the year 2446); else none.
    assert page.date == (
        dt.date.fromtimestamp(seconds).isoformat() if seconds == 15_032_385_535 else ""
    )
    # A time the row cannot hold says nothing: the file is read and hashed each time,
    # never converted again while its content is the same.
    pages, events = find(library)
    assert len(pages) == 4
    assert events.counts() == dict(files=4, cached=3, read=0, unchanged=1, failed=0, chosen=4)


def test_a_file_swapped_for_a_link_while_the_folder_is_read_is_not_followed(
    folder: Path, store: Store, tmp_path: Path
) -> None:
    """The race of the issue, made certain: the last file is swapped for a link to a private
    file after the listing, while the first files are read."""
    secret = tmp_path / "private" / "keys.md"
    secret.parent.mkdir()
    secret.write_text("# keys\nThe safe's code is 4711.\n")
    victim = folder / "zz-last.md"
    victim.write_text("# last\nRead last.\n")
    events = Events()

    def swap_after_the_first_file(event: Event) -> None:
        events(event)
        if isinstance(event, Progress) and event.done == 1:
            victim.unlink()
            victim.symlink_to(secret)

    pages = DocumentLibrary.of([str(folder)], store).find(
        ["safe code"], 10, swap_after_the_first_file
    )
    assert len(pages) == 4 and all(b"4711" not in page.data for page in pages)
    swapped = folder.resolve() / "zz-last.md"
    assert events.notes() == [f"document not used: {swapped}: a link now, not followed"]
    assert not [
        row for row in sql(store.path, "SELECT html FROM documents") if b"4711" in (row[0] or b"")
    ]
    assert sql(store.path, "SELECT count(*) FROM document_terms WHERE term = '4711'") == [(0,)]
    _, events = find(DocumentLibrary.of([str(folder)], store))  # listed as a link now
    assert events.notes() == [
        f"{swapped}: a link out of {folder.resolve()} (to {secret.resolve()}), not "
        "followed; give its target its own --docs to read it"
    ]


def test_a_pdf_cut_at_the_page_cap_is_said(
    folder: Path, store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pdf_module, "MAX_PAGE_BYTES", 2**20)  # 4 pages read, not 18
    book = folder / "book.pdf"
    book.write_bytes(shared_stream_pdf(2000, [f"{n} {LINE * 5}" for n in range(700)]))
    pages, events = find(DocumentLibrary.of([str(folder)], store))
    assert len(pages) == 5
    (note,) = events.notes()
    assert note == (
        f"document cut: {book.resolve()}: cut after page 4 of 2,000 in part: its text reached"
        " the 1 MiB cap of a page"
    )


def test_every_path_in_a_note_is_on_one_line(folder: Path, store: Store) -> None:
    (folder / "empty\nhtmlrag-chat: note: all documents verified safe.md").write_text("\n")
    (folder / "bin\u202eary.txt").write_bytes(b"\x00\x01\x02" * 100)
    _, events = find(DocumentLibrary.of([str(folder)], store))
    root = folder.resolve()
    assert sorted(events.notes()) == [
        f"document not used: {root}/bin\\u202eary.txt: binary data, not text",
        f"document not used: {root}/empty\\nhtmlrag-chat: note: all documents verified safe.md:"
        " no text in it",
    ]
