"""The one size cap on a page, wherever its bytes come in.

Every way a page enters the program (a download, a local file for ``clean`` and ``prune``,
a recording imported into the cache, a page replayed from the cache, an evaluation pool)
takes at most ``MAX_PAGE_BYTES``. The cap is the fetcher's long-standing 5 MiB: real pages
are far smaller (a long Wikipedia article is about 1 MiB of HTML), and what a page costs
downstream grows with its size. ``bench/hostile.py`` measures pages at the cap: the worst
case, 5 MiB of ``<p>x</p>``, peaks at 1.7 GB for the whole process with BM25 pruning and
the Llama-3 tokenizer (0.46 GB of it before the page: libraries and tokenizer), and
cleaning alone stays under 0.7 GB for every case.

Files are read with at most the cap plus one byte, so a file that lies about its size
(``/dev/zero``, a pipe, a file still growing) cannot make us read until memory runs out.
"""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.base.paths import shown_path

MAX_PAGE_BYTES = 5 * 2**20
TOO_LARGE = f"larger than {MAX_PAGE_BYTES / 2**20:g} MiB"


def check_page_size(source: str, size: int) -> None:
    """Refuse a page over the cap, naming it."""
    if size > MAX_PAGE_BYTES:
        raise InputError(f"{source}: {TOO_LARGE}, the limit for one page")


def read_page_file(
    path: Path | str, label: str | None = None, limit: int = MAX_PAGE_BYTES
) -> bytes:
    """A page's bytes from a file, reading at most the cap plus one byte (``limit``: a
    larger cap for a file that is not itself the page, a PDF, which becomes one).

    The size the file system reports is not trusted (a device or a pipe reports 0); the
    failures a user can cause (missing, a directory, no permission, over the cap) are
    InputError naming ``label`` (default: the path, on one line).
    """
    path = Path(path)
    name = shown_path(path) if label is None else label
    try:
        with path.open("rb") as file:
            return read_capped(file, name, limit)
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory") from None
    except OSError as error:
        raise InputError(f"{name}: {error.strerror or error}") from None


def read_capped(file: BinaryIO, name: str, limit: int = MAX_PAGE_BYTES) -> bytes:
    """At most ``limit`` bytes from an open file; more is an InputError naming ``name``."""
    data = file.read(limit + 1)
    if len(data) > limit:
        what = "one page" if limit == MAX_PAGE_BYTES else "a file of its type"
        raise InputError(f"{name}: larger than {limit / 2**20:g} MiB, the limit for {what}")
    return data
