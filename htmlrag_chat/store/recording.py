"""Recordings: searches and their pages as JSON lines, to replay a session on another machine.

One object per line, ``{"query": ..., "results": [{"url", "title", "snippet", "html"}]}``,
where ``html`` is the page as text, or null when it was not downloaded as a readable page.
Text rather than bytes keeps the file readable and diffable; an imported page is stored as
UTF-8 with a header that says so, so it decodes the same way it was exported.

A path ending in ``.gz`` is gzip-compressed text, read and written transparently; the
compressed file carries no timestamp, so exporting the same searches to the same file name
gives the same bytes.

Bytes that come in are capped like a download: a page over the page cap is stored as
skipped (as the fetcher would have recorded it), a line is read only up to
``MAX_LINE_BYTES``, and a file only up to ``MAX_IMPORT_BYTES`` of text and ``MAX_LINES``
lines, so that a recording (or a small gzip file that inflates to gigabytes, or to millions
of blank lines) cannot exhaust memory or time. The file is read in large blocks and split
in C, so blank lines cost next to nothing.
"""

from __future__ import annotations

import gzip
import io
import json
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from htmlrag_chat.base.atomic import output_file
from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path
from htmlrag_chat.base.safety import one_line, safe_url
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.limits import MAX_PAGE_BYTES, TOO_LARGE
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

# A search's results with their pages, escaped as JSON: room for 16 pages at the page cap.
MAX_LINE_BYTES = 16 * 2 * MAX_PAGE_BYTES
# Far more than any recording (the 400 pages of the shared corpus are 60 MB as text),
# and a bomb inflating past it costs seconds, not the disk.
MAX_IMPORT_BYTES = 2 * 2**30
MAX_LINES = 1_000_000  # blank lines included
_BLOCK_BYTES = 1 << 20

_SHAPE = (
    'expected {"query": "...", "results": [{"url": "...", "title": "...", "snippet": "...",'
    ' "html": "..." or null}]}'
)


def export_jsonl(store: Store, path: Path, force: bool = False) -> int:
    """Write every stored search with its pages to ``path``; returns the lines written.

    ``path`` follows the rules of a file the user named (``atomic.output_file``: an
    existing file only with ``force``, through links, a regular file only) and is replaced
    only once the export is complete; the cache file itself, or its log, as ``path`` is
    refused before anything is written."""
    path = Path(path)
    lines = 0
    cache_files = [store.path.with_name(store.path.name + end) for end in ("", "-wal", "-shm")]
    with output_file(path, cache_files, force) as raw, _text_writer(raw, path) as out:
        for query, results in store.searches():
            record = {"query": query, "results": [_export(store, r) for r in results]}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            lines += 1
    return lines


def import_jsonl(store: Store, path: Path) -> int:
    """Store the searches and pages recorded in ``path``; returns the records read.

    All or nothing: one transaction, so a bad line leaves the cache as it was. A file that
    cannot be read or holds something else is an ``InputError`` (the cache is fine); a cache
    that is damaged is refused before anything is written, as ``cache stats`` would refuse it.
    """
    path = Path(path)
    fetched_at = time.time()
    records = 0
    store.check()
    try:
        with _open_bytes(path) as file, store.transaction():
            for number, line in _capped_lines(file, path):
                _import(store, line, f"{shown_path(path)}, line {number}", fetched_at)
                records += 1
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(f"cannot read {shown_path(path)}: {_reason(error)}") from error
    return records


def import_searxng(store: Store, path: Path) -> int:
    """Store the searches in a SearXNG JSON response file (what ``/search?q=...&format=json``
    answers; one object, or one per line) as imported searches without pages: the next
    question asking one of them takes its results and downloads the pages. Returns the
    searches read; all or nothing, like ``import_jsonl``."""
    path = Path(path)
    try:
        with _open_bytes(path) as file:
            data = file.read(MAX_LINE_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(f"cannot read {shown_path(path)}: {_reason(error)}") from None
    if len(data) > MAX_LINE_BYTES:
        raise InputError(f"{shown_path(path)}: longer than {MAX_LINE_BYTES // 2**20} MiB")
    try:
        responses = [json.loads(data)]
    except ValueError:
        responses = [_json(line, f"{shown_path(path)}, line {n}") for n, line in
                     enumerate(data.splitlines(), 1) if line.strip()]  # fmt: skip
    except RecursionError:
        raise InputError(f"{shown_path(path)}: JSON nested too deeply") from None
    searches = [_searxng_search(response, str(path)) for response in responses]
    store.check()
    with store.transaction():
        for query, results in searches:
            store.put_search(query, results)
    return len(searches)


def _json(line: bytes, where: str) -> object:
    """A line of JSON, or an ``InputError`` saying why it is none."""
    try:
        return json.loads(line)
    except ValueError as error:
        raise InputError(f"{where}: not JSON ({error})") from None
    except RecursionError:  # json nests by recursion: 100,000 "[" exhaust the stack
        raise InputError(f"{where}: JSON nested too deeply") from None


def _searxng_search(response: object, where: str) -> tuple[str, list[SearchResult]]:
    """A SearXNG response's query and results (url, title, content), made safe."""
    if not (
        isinstance(response, dict)
        and isinstance(response.get("query"), str)
        and isinstance(response.get("results"), list)
    ):
        raise InputError(f'{where}: expected SearXNG\'s JSON: {{"query": "...", "results": [...]}}')
    results = [
        SearchResult(
            safe_url(item["url"]),
            one_line(str(item.get("title") or "")),
            one_line(str(item.get("content") or "")),
        )
        for item in response["results"]
        if isinstance(item, dict) and isinstance(item.get("url"), str)
    ]
    return response["query"], results


def _capped_lines(file: io.BufferedIOBase, path: Path) -> Iterator[tuple[int, bytes]]:
    """The file's lines that are not blank, with their numbers, read in blocks; an
    ``InputError`` as soon as a cap is passed."""
    number = size = 0
    held: list[bytes] = []  # the start of a line that the next block goes on with
    held_bytes = 0
    while block := file.read(_BLOCK_BYTES):
        size += len(block)
        if size > MAX_IMPORT_BYTES:
            raise InputError(
                f"{shown_path(path)}: more than {MAX_IMPORT_BYTES // 2**20:,} MiB of text"
            )
        lines = block.split(b"\n")
        if len(lines) > 1:
            lines[0] = b"".join([*held, lines[0]])
            held, held_bytes = [lines[-1]], len(lines[-1])
            if number + len(lines) - 1 > MAX_LINES:
                raise InputError(f"{shown_path(path)}: more than {MAX_LINES:,} lines")
            for line in lines[:-1]:
                number += 1
                _check_length(len(line), path, number)
                if line and not line.isspace():
                    yield number, line
        else:
            held.append(block)
            held_bytes += len(block)
        _check_length(held_bytes, path, number + 1)
    last = b"".join(held)
    if last and not last.isspace():
        yield number + 1, last


def _check_length(length: int, path: Path, number: int) -> None:
    if length > MAX_LINE_BYTES:
        raise InputError(
            f"{shown_path(path)}, line {number}: longer than {MAX_LINE_BYTES // 2**20} MiB"
        )


def _gzipped(path: Path) -> bool:
    return path.name.endswith(".gz")


@contextmanager
def _text_writer(raw: IO[bytes], path: Path) -> Iterator[IO[str]]:
    """UTF-8 lines onto ``raw``, through gzip (without a timestamp, named as ``path`` in
    its header) for ``.gz``; ``raw`` stays open for its owner to finish."""
    zipped = gzip.GzipFile(path.name, "wb", fileobj=raw, mtime=0) if _gzipped(path) else None
    text = io.TextIOWrapper(zipped or raw, encoding="utf-8", newline="\n")
    yield text
    text.flush()
    text.detach()
    if zipped is not None:
        zipped.close()


def _open_bytes(path: Path) -> io.BufferedIOBase:
    """``path`` for reading lines as bytes, decompressed for ``.gz``."""
    return gzip.open(path, "rb") if _gzipped(path) else path.open("rb")


def _reason(error: Exception) -> str:
    """One line on why a recording could not be read: the OS's words, or the gzip damage.

    Damaged gzip data surfaces as BadGzipFile (an OSError without ``strerror``), EOFError
    when the stream is cut short, or zlib.error for corrupt blocks.
    """
    if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile):
        return error.strerror or str(error)
    return f"not valid gzip data ({error})"


def _import(store: Store, line: bytes, where: str, fetched_at: float) -> None:
    query, results = _parse(line, where)
    try:
        store.put_search(query, [result for result, _ in results])
        for result, html in results:
            if html is not None:
                store.put_page(_page(result.url, html, fetched_at))
    except UnicodeEncodeError:
        raise InputError(f"{where}: text with a lone surrogate, not valid Unicode") from None


def _export(store: Store, result: SearchResult) -> dict[str, Any]:
    return {
        "url": result.url,
        "title": result.title,
        "snippet": result.snippet,
        "html": _html(store.get_page(result.url)),
    }


def _html(page: FetchResult | None) -> str | None:
    """The page as text, decoded as the pipeline would (a bogus stored charset is ignored)."""
    if page is None or page.outcome is not Outcome.OK or page.body is None:
        return None
    return decode_html(page.body, page.charset).text


def _parse(line: bytes, where: str) -> tuple[str, list[tuple[SearchResult, str | None]]]:
    record = _json(line, where)
    if not (
        isinstance(record, dict)
        and isinstance(record.get("query"), str)
        and isinstance(record.get("results"), list)
        and all(_is_result(item) for item in record["results"])
    ):
        raise InputError(f"{where}: {_SHAPE}")
    results = [  # URLs and text made safe before they are stored, as for a live search
        (
            SearchResult(
                safe_url(item["url"]),
                one_line(item.get("title", "")),
                one_line(item.get("snippet", "")),
            ),
            item.get("html"),
        )
        for item in record["results"]
    ]
    return record["query"], results


def _is_result(item: object) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("url"), str)
        and isinstance(item.get("title", ""), str)
        and isinstance(item.get("snippet", ""), str)
        and isinstance(item.get("html"), (str, type(None)))
    )


def _page(url: str, html: str, fetched_at: float) -> FetchResult:
    body = html.encode("utf-8")
    if len(body) > MAX_PAGE_BYTES:
        return FetchResult(url, Outcome.SKIPPED, TOO_LARGE, bytes=len(body), fetched_at=fetched_at)
    return FetchResult(
        url=url,
        outcome=Outcome.OK,
        status=200,
        content_type="text/html; charset=utf-8",
        charset="utf-8",
        body=body,
        bytes=len(body),
        fetched_at=fetched_at,
    )
