"""Your own documents as a source beside the web: found, read into the cache once, and the
best of them for a question handed to the agent as pages.

The documents source is a page source (``sources/source.py``) beside the web, on the
documents layer and the store, below the agent, and knows no network. Each search round the
agent asks it for the pages its queries need (``find``, in the question's worker thread):

- the files under the given paths are listed (``documents/walk.py``: links out of a folder
  are not followed, other types are counted for one note);
- a file whose size and modification time match its row in the cache is not opened; any
  other is read, and converted and cleaned (``documents/convert.py``) only when its
  content's hash differs from the row's, so a folder asked about again reads only what
  changed (the stage's counts say how many were read, found unchanged and taken from the
  cache). While files are read ``Progress`` events say how far (the first and last file,
  and one a quarter-second between);
- a file that cannot be used (broken, encrypted, without text) is said in one line, and its
  row keeps the reason, so it is not parsed again until it changes; one that cannot be
  opened (or was swapped for a link or a pipe since the listing: ``documents/opening.py``)
  is tried again next time, since that is cheap and may be fixed meanwhile; a PDF cut short
  (``documents/pdf.py``) is said when it is read;
- when there are more documents than pages a round reads, the best are chosen by BM25 over
  the terms stored for each (each query's best first, as web results are interleaved); a
  document holding none of a query's words is not chosen then. Fewer are all taken.

A document comes back as a ``PageInput`` with a ``file://`` URL, its title and its modified
day, and goes through the same cleaning, pruning, numbering and citation checks as a page;
documents and pages compete for the same budget. In a replay the cache file is read-only:
documents are then kept in the side file of derived artefacts (``store.embeddings``), and
when that cannot be used, in memory for the round, with one note. Nothing is ever written
next to the user's files.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from htmlrag_chat.base import cancel
from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import EventSink, Notice, Progress, stage
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.convert import convert
from htmlrag_chat.documents.opening import read_document
from htmlrag_chat.documents.types import READ
from htmlrag_chat.documents.walk import (
    MAX_FILES,
    Found,
    FoundFile,
    check_roots,
    find_documents,
)
from htmlrag_chat.lexical import counted_bm25_by_term, sum_by_text, terms
from htmlrag_chat.modelio.extras import MissingExtra
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.settings.kinds import Paths
from htmlrag_chat.settings.tree import ANSWERING, Setting
from htmlrag_chat.sources.source import Asking, Chosen, PageSource, SourceEntry, interleaved
from htmlrag_chat.store.documents import StoredDocument, path_key, storable_mtime

# The store (SQLite through sqlite-utils, which imports numpy) loads when a question reads
# documents, not with the command line, which imports this module for its setting.
if TYPE_CHECKING:
    from htmlrag_chat.store.db import Store

# The conversion that made a cached row: a release that converts differently bumps it, and
# every document is read again once.
CONVERSION = 1
PROGRESS_EVERY = 0.25  # seconds between two progress events while files are read


@dataclass
class DocumentLibrary(PageSource):
    name = "documents"

    roots: list[Path]  # ``walk.check_roots``: each a folder or a document
    cache_path: Path  # the cache file, or in a replay the side file of derived artefacts
    side: bool = False  # ``cache_path`` is the side file: bypassed for memory if it fails
    _said: set[str] = field(default_factory=set, init=False, repr=False)

    @classmethod
    def of(cls, paths: Sequence[str], store: Store) -> DocumentLibrary:
        """The documents under ``paths``, kept in ``store`` (its side file when read-only);
        a path that cannot be used is an error now, before any question."""
        from htmlrag_chat.store.embeddings import derived_cache_path

        roots = check_roots(paths)
        if store.readonly:
            return cls(roots, derived_cache_path(), side=True)
        return cls(roots, store.path)

    def gather(self, asking: Asking) -> Chosen:
        return Chosen(self, asking)

    def key(self) -> object:
        """Each document's path, size and modification time: a part is asked again when
        one changed."""
        found = find_documents(self.roots)
        return [[str(file.path), file.size, file.mtime_ns] for file in found.files]

    def find(self, queries: Sequence[str], limit: int, emit: EventSink) -> list[PageInput]:
        """The documents for ``queries`` (at most ``limit``), as pages (thread side)."""
        with self._open(emit) as store:
            with stage(emit, "documents") as counts:
                found = find_documents(self.roots)
                self._say_left_out(found, emit)
                usable = self._load(store, found.files, counts, emit)
                chosen = self._choose(store, usable, queries, limit)
                counts["chosen"] = len(chosen)
            pages = store.document_pages([document.id for _, document in chosen])
        return [
            PageInput(file.path.as_uri(), pages[document.id], "utf-8", document.title,
                      _day(file.mtime_ns))
            for file, document in chosen
            if document.id in pages
        ]  # fmt: skip

    # -- reading

    def _load(
        self, store: Store, files: list[FoundFile], counts: dict[str, int], emit: EventSink
    ) -> list[tuple[FoundFile, StoredDocument]]:
        """Each file's row, read again where the file changed; those with a page."""
        stored = store.stored_documents([path_key(file.path) for file in files])
        stale = [file for file in files if not _unchanged(stored.get(path_key(file.path)), file)]
        counts.update(files=len(files), cached=len(files) - len(stale), read=0, unchanged=0)
        missing_extra: list[MissingExtra] = []
        failed, said = 0, 0.0
        for done, file in enumerate(stale, 1):
            cancel.check()  # a stopped question ends between two files
            try:
                kept = self._read(store, file, stored.get(path_key(file.path)), counts, emit)
            except MissingExtra as error:
                missing_extra.append(error)
            except InputError as error:  # it could not be opened: tried again next time
                self._say(f"document not used: {error}", emit)
                failed += 1
            else:
                failed += kept.reason is not None
            if done in (1, len(stale)) or time.monotonic() - said >= PROGRESS_EVERY:
                said = time.monotonic()  # a log (-v) gets a line a quarter-second, not a file
                emit(Progress("documents", done, len(stale), failed))
        if missing_extra:
            self._say(f"{len(missing_extra)} PDF file(s) left out: {missing_extra[0]}", emit)
        usable = []
        for file, document in self._rows(store, files).items():
            if document.reason is not None:
                # on one line, also a reason an older release kept with a raw file name
                self._say(f"document not used: {shown_path(document.reason)}", emit)
            else:
                usable.append((file, document))
        counts["failed"] = len(files) - len(usable)
        return usable

    def _rows(self, store: Store, files: list[FoundFile]) -> dict[FoundFile, StoredDocument]:
        """The rows of ``files`` as they are now (those read again have new ones)."""
        rows = store.stored_documents([path_key(file.path) for file in files])
        return {
            file: rows[path_key(file.path)]
            for file in files
            if path_key(file.path) in rows and _fresh(rows[path_key(file.path)], file)
        }

    def _read(
        self,
        store: Store,
        file: FoundFile,
        before: StoredDocument | None,
        counts: dict[str, int],
        emit: EventSink,
    ) -> StoredDocument:
        """Read one file; convert it unless its content is what ``before`` was made from."""
        data = read_document(file)
        digest = hashlib.sha256(data).hexdigest()
        mtime_ns = storable_mtime(file.mtime_ns)
        if before is not None and before.sha256 == digest and before.version == CONVERSION:
            store.touch_document(before.path, file.size, mtime_ns)
            counts["unchanged"] += 1
            return replace(before, size=file.size, mtime_ns=mtime_ns)
        counts["read"] += 1
        document = StoredDocument(
            path_key(file.path), file.size, mtime_ns, digest, CONVERSION, file.kind,
            title=shown_path(file.path.name), reason=None, terms=0,
        )  # fmt: skip
        try:
            converted = convert(file.path, file.kind, data)
        except MissingExtra:
            raise
        except InputError as error:
            document = replace(document, reason=str(error))
            store.put_document(document, None, {})
            return document
        except Exception as error:  # a file no converter expected: it alone is left out
            why = " ".join(str(error).split()) or type(error).__name__
            document = replace(document, reason=f"{shown_path(file.path)}: cannot be read ({why})")
            store.put_document(document, None, {})
            return document
        if converted.cut is not None:
            self._say(f"document cut: {shown_path(file.path)}: {converted.cut}", emit)
        words = Counter(terms(converted.text))
        document = replace(document, title=converted.title, terms=sum(words.values()))
        store.put_document(document, converted.html, words)
        return document

    # -- choosing

    def _choose(
        self,
        store: Store,
        usable: list[tuple[FoundFile, StoredDocument]],
        queries: Sequence[str],
        limit: int,
    ) -> list[tuple[FoundFile, StoredDocument]]:
        """All documents when they are few; else each query's best by BM25, interleaved."""
        if len(usable) <= limit:
            return usable
        lengths = [document.terms for _, document in usable]
        rankings = []
        for query in queries:
            words = terms(query)
            held = store.term_counts(words)
            documents = [
                {term: by_id[d.id] for term, by_id in held.items() if d.id in by_id}
                for _, d in usable
            ]
            shares = counted_bm25_by_term(words, documents, lengths)
            scores = sum_by_text(shares, len(usable))
            ranked = sorted(range(len(usable)), key=lambda index: -scores[index])
            rankings.append([index for index in ranked if scores[index] > 0])
        return [usable[index] for index in interleaved(rankings, limit)]

    # -- plumbing

    def _open(self, emit: EventSink) -> Store:
        """The file documents are kept in; a side file that fails is bypassed for memory."""
        from htmlrag_chat.store.db import Store, StoreError

        try:
            return Store.open(self.cache_path)
        except StoreError as error:
            if not self.side:
                raise
            reason = error.__cause__ or error
            self._say(
                f"the side file {shown_path(self.cache_path)} cannot be used ({reason}); "
                "documents are read again each round instead (the file is left as it is)",
                emit,
            )
            return Store.open(":memory:")

    def _say_left_out(self, found: Found, emit: EventSink) -> None:
        if found.other_types:
            types = ", ".join(f"{name} {count}" for name, count in found.other_types.most_common())
            total = sum(found.other_types.values())
            self._say(f"left out {total} file(s) of types not read ({READ} are): {types}", emit)
        for problem in found.problems:
            self._say(problem, emit)
        if found.over:
            self._say(f"left out {found.over} document(s) past the first {MAX_FILES:,}", emit)

    def _say(self, message: str, emit: EventSink) -> None:
        """A note, once per library (an agent the chat app keeps says it once a session)."""
        if message not in self._said:
            self._said.add(message)
            emit(Notice(message))


def _fresh(document: StoredDocument | None, file: FoundFile) -> bool:
    """Whether the row was made from the file as listed (its time as the row can hold it)."""
    return (
        document is not None
        and document.size == file.size
        and document.mtime_ns == storable_mtime(file.mtime_ns)
        and document.version == CONVERSION
    )


def _unchanged(document: StoredDocument | None, file: FoundFile) -> bool:
    """Whether the file need not be opened: its row is fresh, judged by a time the row
    holds as it is. A time the cache cannot hold (past 2262, a broken file system or
    archive) says nothing, so such a file is read and hashed each time (converted only
    when its content changed)."""
    return _fresh(document, file) and storable_mtime(file.mtime_ns) == file.mtime_ns


def _day(mtime_ns: int) -> str:
    """The local day a file was last modified, as ``YYYY-MM-DD``; none (``""``) for a
    time no calendar date stands for (past the year 9999, before the year 1)."""
    try:
        return dt.date.fromtimestamp(mtime_ns / 1e9).isoformat()
    except (OverflowError, ValueError, OSError):
        return ""


# ``--docs``, as the rest of the program reads it from ``sources/registry.py``.
DOCUMENTS = SourceEntry(
    Setting(
        "research", "docs", Paths(), (),
        "your own documents as sources beside the web: a file or a folder (read "
        "recursively; docs/docs.md lists the types read), repeatable", ANSWERING,
        example=("~/notes",),
    ),
    called="your documents",
    listed="documents",
    check=check_roots,
    build=DocumentLibrary.of,
)  # fmt: skip
