"""The evaluation sets the README quotes, rerunnable from a clone: their pages are in
``bench/data/eval_pages.tar.xz``, their questions in ``bench/data/eval/``.

The sets (``docs/evaluation.md``): the English dev set (40 questions, ``qa.jsonl`` of the
shared corpus), the multilingual dev set (``qa_lang``, 43), the held-out sets
(``qa_lang_holdout``, 16; ``qa_en_holdout``, 12). Each question was measured on its page and
the 9 pages of the 400-page corpus that BM25 ranks highest for it; those distractors depend
on the whole pool (its term statistics), so each question is written here with its ten
pages in the order measured (``"pages"``: no pool is needed, and the figures are the same),
and only the 280 pages they use are shipped (49 MB of HTML, 6.1 MB as xz; the 400 pages
would be 60 MB, 11.6 MB as gzip).

    python bench/eval_data.py            # unpack the pages into bench/data/corpus (--into)
    python bench/eval_data.py --pack     # rebuild the sets and the archive from ../shared
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
from pathlib import Path
from typing import Any

from benchlib import ROOT
from htmlrag_chat.eval.distractors import PoolPage, load_pool, mix, pick_distractors
from htmlrag_chat.eval.stored import EvalCache

DATA = ROOT / "bench" / "data"
ARCHIVE = DATA / "eval_pages.tar.xz"
SETS = DATA / "eval"
CORPUS = DATA / "corpus"  # where the pages are unpacked (not in git)
SHARED = ROOT.parent / "shared" / "corpus"
# Each set as measured: where its questions are, relative to the repository (or the shared
# corpus), with the runner's defaults for distractors (hard, 9, seed 0).
SOURCES = {
    "qa": SHARED / "qa.jsonl",
    "qa_lang": DATA / "qa_lang.jsonl",
    "qa_lang_holdout": DATA / "qa_lang_holdout.jsonl",
    "qa_en_holdout": DATA / "qa_en_holdout.jsonl",
}
K, MODE, SEED = 9, "hard", 0


def frozen(record: dict[str, Any], pool: list[PoolPage], corpus: Path) -> dict[str, Any]:
    """``record`` with its ten pages in the order the runner mixes them (``items.ready_qa``)."""
    if "pages" in record:
        return record
    gold = [page for page in pool if page.path == corpus / record["file"]]
    seed = f"{SEED}:{record['id']}"
    chosen = pick_distractors(record["question"], gold, pool, K, MODE, seed)
    pages = [str(page.path.relative_to(corpus)) for page in mix(gold, chosen, seed)]
    return record | {"pages": pages}


def pack() -> None:
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED}: no shared corpus beside the checkout to pack from")
    pool = load_pool(SHARED, EvalCache())  # the runner's pool: the dataset's folder
    SETS.mkdir(exist_ok=True)
    used: set[str] = set()
    for name, source in SOURCES.items():
        records = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
        records = [frozen(record, pool, SHARED) for record in records]
        used.update(page for record in records for page in record["pages"])
        lines = [json.dumps(record, ensure_ascii=False) + "\n" for record in records]
        (SETS / f"{name}.jsonl").write_text("".join(lines), encoding="utf-8")
    with tarfile.open(ARCHIVE, "w:xz", preset=9) as archive:
        for page in sorted(used):
            info = archive.gettarinfo(SHARED / page, arcname=page)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with (SHARED / page).open("rb") as data:
                archive.addfile(info, data)
    print(f"{ARCHIVE.relative_to(ROOT)}: {len(used)} pages, {ARCHIVE.stat().st_size:,} bytes")


def unpack(into: Path) -> None:
    """The pages into ``into``, each where the sets name it (``pages/...``)."""
    with tarfile.open(ARCHIVE, "r:xz") as archive:
        members = archive.getmembers()
        for member in members:
            if not member.isfile() or not member.name.startswith("pages/") or ".." in member.name:
                raise SystemExit(f"{ARCHIVE.name}: unexpected member {member.name!r}")
        archive.extractall(into, members=members, filter="data")
    missing = [
        page
        for source in SETS.glob("*.jsonl")
        for line in source.read_text(encoding="utf-8").splitlines()
        for page in json.loads(line)["pages"]
        if not (into / page).is_file()
    ]
    if missing:
        raise SystemExit(f"{len(missing)} pages the sets name are not in the archive")
    print(f"{into}: {len(members)} pages")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pack", action="store_true", help="rebuild from ../shared/corpus")
    parser.add_argument("--into", type=Path, default=CORPUS, help="where the pages go")
    args = parser.parse_args()
    if args.pack:
        pack()
    unpack(args.into)
    return 0


if __name__ == "__main__":
    sys.exit(main())
