"""Benchmark the two PDF text libraries considered for PDF documents: pypdfium2 (PDFium)
and pypdf, on real PDFs: corpus pages printed to PDF by LibreOffice.

For each page, LibreOffice (``soffice --headless``, Debian's ``libreoffice-writer-nogui``)
writes a PDF; each library extracts its text (all pages), best of 3 runs. Text quality is
measured against the words of the cleaned page the PDF was made from: word recall (its
words found), word precision (extracted words that are its words: broken or merged words
lower it) and bigram recall (pairs of neighbouring words: reading order). Needs ``soffice``
and both libraries (``pip install pypdf pypdfium2``; pypdf is not a dependency of the
project). Writes bench/results/pdf_libraries.json.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

from benchlib import argument_parser, write_report
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

PAGES = 12
RUNS = 3
WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return [word.casefold() for word in WORD.findall(text)]


def overlap(found: Counter[object], wanted: Counter[object]) -> int:
    return sum((found & wanted).values())


def with_pdfium(path: Path) -> str:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(path))
    try:
        return "\n".join(page.get_textpage().get_text_bounded() for page in document)
    finally:
        document.close()


def with_pypdf(path: Path) -> str:
    import pypdf

    return "\n".join(page.extract_text() for page in pypdf.PdfReader(str(path)).pages)


def main() -> None:
    args = argument_parser(__doc__, "pdf_libraries.json").parse_args()
    soffice = shutil.which("soffice")
    assert soffice, "needs LibreOffice: apt-get install libreoffice-writer-nogui"
    pages = sorted((args.corpus / "pages").glob("*.html"), key=lambda p: p.stat().st_size)
    chosen = pages[:: max(1, len(pages) // PAGES)][:PAGES]
    libraries: dict[str, Callable[[Path], str]] = {"pypdfium2": with_pdfium, "pypdf": with_pypdf}
    results: dict[str, dict[str, list[float]]] = {name: {} for name in libraries}
    with tempfile.TemporaryDirectory(prefix="bench-pdf-") as scratch:
        for page in chosen:
            shutil.copy(page, scratch)
        subprocess.run(
            [soffice, "--headless", "--infilter=HTML (StarWriter)", "--convert-to",
             "pdf:writer_pdf_Export", "--outdir", scratch, *(str(Path(scratch) / p.name)
             for p in chosen)],
            check=True, capture_output=True,
        )  # fmt: skip
        made = [page for page in chosen if (Path(scratch) / f"{page.stem}.pdf").is_file()]
        for page in made:
            pdf = Path(scratch) / f"{page.stem}.pdf"
            _, cleaned = clean_page(PageInput(page.name, page.read_bytes()))
            reference = words(visible_text(cleaned))
            wanted, pairs = Counter(reference), Counter(pairwise(reference))
            for name, extract in libraries.items():
                times = []
                for _ in range(RUNS):
                    start = time.perf_counter()
                    text = extract(pdf)
                    times.append((time.perf_counter() - start) * 1000)
                found = words(text)
                counted, found_pairs = Counter(found), Counter(pairwise(found))
                row = results[name]
                row.setdefault("ms", []).append(min(times))
                row.setdefault("word_recall", []).append(overlap(counted, wanted) / len(reference))
                row.setdefault("word_precision", []).append(
                    overlap(counted, wanted) / max(1, len(found))
                )
                row.setdefault("bigram_recall", []).append(
                    overlap(found_pairs, pairs) / max(1, len(reference) - 1)
                )
                row.setdefault("pdf_bytes", []).append(pdf.stat().st_size)
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (shared), Python "
        f"{platform.python_version()}, no GPU",
        "pages": len(chosen),
        "pdfs": len(made),  # LibreOffice may fail on a page: it is left out
        "writer": subprocess.run(
            [soffice, "--version"], capture_output=True, text=True
        ).stdout.strip(),
        "libraries": {
            name: {
                "ms_total": round(sum(row["ms"]), 1),
                "ms_median": round(statistics.median(row["ms"]), 1),
                **{
                    key: round(statistics.fmean(row[key]), 4)
                    for key in ("word_recall", "word_precision", "bigram_recall")
                },
            }
            for name, row in results.items()
        },
        "command": "nice -n 10 .venv/bin/python bench/pdf_libraries.py",
    }
    write_report(args.out, report)
    for name, summary in report["libraries"].items():
        print(name, summary)


if __name__ == "__main__":
    main()
