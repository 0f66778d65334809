"""Writes ``bench/data/research_holdout.jsonl``: two-part questions for ``bench/research.py``
made from QA items no question of ``research_multi.jsonl`` uses (issue 52's check, run on
questions nobody read while research mode was tuned).

Each question joins two items of one language as its writer would list them ("A, and b?",
"A, und b?", "¿A, y b?", "A, et b?"), kept only when research splits it back into exactly
the two questions; each folder holds the two gold pages and four other corpus pages, drawn
with a fixed seed, so the file is the same on every run.

    .venv/bin/python bench/research_holdout.py
"""

from __future__ import annotations

import json
import random

from benchlib import ROOT
from htmlrag_chat.research.parts import written_parts

DATA = ROOT / "bench" / "data"
SETS = ("qa_en_holdout", "qa_lang", "qa_lang_holdout", "qa_structure_holdout")
JOIN = {"de": ", und ", "es": ", y ", "fr": ", et ", "en": ", and "}
WANTED = {"de": 6, "es": 2, "fr": 1, "en": 1}  # questions per language
SEED = 52


def main() -> None:
    used = {
        fact["qa"]
        for line in (DATA / "research_multi.jsonl").read_text(encoding="utf-8").splitlines()
        for fact in json.loads(line)["facts"]
    }
    items = {}
    for name in SETS:
        for line in (DATA / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            item = json.loads(line)
            items[item["id"]] = item
    free = [item for key, item in items.items() if key not in used and "file" in item]
    pages = sorted({item["file"] for item in items.values()})
    rng = random.Random(SEED)
    made: list[dict] = []
    for lang, count in WANTED.items():
        pool = [item for item in free if item["lang"] == lang]
        rng.shuffle(pool)
        done = 0
        while done < count and len(pool) >= 2:
            first = pool.pop()
            for second in list(pool):
                if second["file"] == first["file"]:
                    continue
                question = _joined(first["question"], second["question"], lang)
                if len(written_parts(question)) != 2:
                    continue
                pool.remove(second)
                others = [page for page in pages if page not in (first["file"], second["file"])]
                made.append({
                    "id": f"rh-{len(made) + 1:02d}", "lang": lang, "question": question,
                    "facts": [
                        {"qa": item["id"], "question": item["question"],
                         "answers": item["answers"], "file": item["file"]}
                        for item in (first, second)
                    ],
                    "distractors": rng.sample(others, 4),
                })  # fmt: skip
                done += 1
                break
    out = DATA / "research_holdout.jsonl"
    out.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in made), "utf-8")
    print(f"wrote {out} ({len(made)} questions)")


def _joined(first: str, second: str, lang: str) -> str:
    first, second = first.lstrip("¿"), second.lstrip("¿")
    joined = first.rstrip("?").rstrip() + JOIN[lang] + second[0].lower() + second[1:]
    return "¿" + joined if lang == "es" else joined


if __name__ == "__main__":
    main()
