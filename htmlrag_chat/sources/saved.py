"""Web pages a browser saved ("Save page as", Web Page, complete: ``NAME.html`` beside its
``NAME_files/`` folder), read as the pages they were saved from (``--saved DIR``).

A page kept for later, or saved from behind a login, answers like the page itself: it is
cleaned, pruned and cited as a web page, under the address it was saved from. Chrome, Edge
and Internet Explorer write that address in a comment before the markup (``<!-- saved from
url=(0041)https://example.com/... -->``, the length in brackets); a page whose comment is
missing, whose length does not match or whose address is not http(s) is cited by its file.
The address is only a name here: nothing is ever fetched from it. ``NAME_files/`` holds the
page's images, styles and frames, which are not pages of their own and are passed over.

The files are found and opened as ``--docs`` finds and opens the user's files
(``documents/walk.py``, ``documents/opening.py``: nothing leads out of a folder given, a
file swapped for a link is not read). When there are more of them than a round reads, each
query's best by BM25 over their visible text are taken, interleaved, as the documents are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.events import EventSink, Notice, stage
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.documents.opening import read_document
from htmlrag_chat.documents.walk import FoundFile, check_roots, find_documents
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.lexical import bm25_scores
from htmlrag_chat.pruning.pipeline import PageInput
from htmlrag_chat.settings.kinds import Paths
from htmlrag_chat.settings.tree import ANSWERING, Setting
from htmlrag_chat.sources.source import Asking, Chosen, PageSource, SourceEntry, interleaved

OPTION = "--saved"
RESOURCES = "_files"  # the folder a browser saves a page's images, styles and frames in
HEAD = 2048  # bytes of a page in which the browser's comment is looked for
_SAVED_FROM = re.compile(rb"<!--\s*saved from url=\((\d{1,5})\)([^\s<>\"']+)\s*-->", re.I)


@dataclass
class SavedPages(PageSource):
    """The pages saved under ``roots`` (folders, or ``.html`` files)."""

    name = "saved"

    roots: list[Path]
    _said: set[str] = field(default_factory=set, init=False, repr=False)

    @classmethod
    def of(cls, paths: Sequence[str]) -> SavedPages:
        """The saved pages under ``paths``; a path that is missing, or a file that is not
        HTML, is an error now, before any question."""
        roots = check_roots(paths, OPTION)
        for root in roots:
            if root.is_file() and not _page(root):
                raise InputError(f"{OPTION} {shown_path(root)}: not a saved web page (.html)")
        return cls(roots)

    def gather(self, asking: Asking) -> Chosen:
        return Chosen(self, asking)

    def key(self) -> object:
        return [[str(file.path), file.size, file.mtime_ns] for file in self._files()]

    def find(self, queries: Sequence[str], limit: int, emit: EventSink) -> list[PageInput]:
        """The saved pages for ``queries`` (at most ``limit``), as pages (thread side)."""
        with stage(emit, "saved") as counts:
            pages, texts = [], []
            for file in self._files():
                try:
                    data = read_document(file)
                except InputError as error:
                    self._say(f"saved page not used: {error}", emit)
                    continue
                pages.append(PageInput(saved_from(data) or file.path.as_uri(), data))
                texts.append(visible_text(parse(decode_html(data).utf8)))
            chosen = _best(texts, queries, limit)
            counts.update(files=len(pages), chosen=len(chosen))
        return [pages[index] for index in chosen]

    def _files(self) -> list[FoundFile]:
        """The saved pages under the roots, without what their ``_files`` folders hold."""
        found = find_documents(self.roots)
        return [
            file
            for file in found.files
            if _page(file.path)
            and not any(
                part.endswith(RESOURCES) for part in file.path.relative_to(file.root).parts[:-1]
            )
        ]

    def _say(self, message: str, emit: EventSink) -> None:
        """A note, once per source (a chat app's agent says it once a session)."""
        if message not in self._said:
            self._said.add(message)
            emit(Notice(message))


def saved_from(data: bytes) -> str | None:
    """The address a browser wrote that the page was saved from, when its comment is there
    near the top, its length is right and it is an http(s) URL with a host."""
    match = _SAVED_FROM.search(data[:HEAD])
    if match is None or int(match[1]) != len(match[2]):
        return None
    try:
        url = match[2].decode("ascii")
        parts = urlsplit(url)
    except (UnicodeDecodeError, ValueError):
        return None
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        return None
    return url


def _page(path: Path) -> bool:
    return path.suffix.lower() in {".html", ".htm"}


def _resource(file: FoundFile) -> bool:
    """Whether the file lies in a page's ``NAME_files`` folder (a frame, not a page)."""
    folders = file.path.relative_to(file.root).parts[:-1]
    return any(folder.endswith(RESOURCES) for folder in folders)


def _best(texts: list[str], queries: Sequence[str], limit: int) -> list[int]:
    """All pages when they are few; else each query's best by BM25, interleaved, those
    holding none of its words left out."""
    if len(texts) <= limit:
        return list(range(len(texts)))
    rankings = []
    for query in queries:
        scores = bm25_scores(query, texts)
        ranked = sorted(range(len(texts)), key=lambda index: -scores[index])
        rankings.append([index for index in ranked if scores[index] > 0])
    return interleaved(rankings, limit)


# ``--saved``, as the rest of the program reads it from ``sources/registry.py``.
SAVED = SourceEntry(
    Setting(
        "research", "saved", Paths(), (),
        "web pages your browser saved (Save page as: NAME.html with its NAME_files folder), "
        "a file or a folder, read as the pages they were saved from and cited by that "
        "address, repeatable", ANSWERING,
        example=("~/Downloads/saved",),
    ),
    called="saved pages",
    listed="saved pages",
    check=SavedPages.of,
    build=lambda paths, store: SavedPages.of(paths),
)  # fmt: skip
