"""The labelled set of ``bench/claims.py`` from the labels read by hand.

``bench/data/claims_labels.tsv`` holds one line per distinct sentence of the answers
``bench/claims_answers.py`` wrote (model, question id, the sentence's place among the
answer's distinct sentences, label, the source words that back it separated by ``||``,
why). This checks every such word to be in a source of the question, adds the perturbed
sentences (a wrong number, a wrong source) of every supported one, and writes
``claims.jsonl``, the answers labelled (``claims_answers.jsonl``) and their contexts
(``claims_contexts.jsonl.gz``) to ``bench/data``.

    .venv/bin/python bench/claims_labels.py --answers DIR --contexts FILE
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import random
import re
import unicodedata
from collections import Counter
from pathlib import Path

from benchlib import ROOT
from htmlrag_chat.evidence.matching import numbers
from htmlrag_chat.reader.citations import answer_sentences

MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen": "Qwen2.5-Coder-1.5B-Instruct-Q4.gguf",
}
parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--answers", type=Path, required=True, help="smollm2.jsonl and qwen.jsonl")
parser.add_argument("--contexts", type=Path, required=True)
args = parser.parse_args()
DATA = str(ROOT / "bench" / "data") + "/"
cs = {c["id"]: c for c in map(json.loads, args.contexts.open(encoding="utf-8"))}
answers = {
    m: {a["id"]: a for a in map(json.loads, (args.answers / f"{m}.jsonl").open(encoding="utf-8"))}
    for m in MODELS
}


def norm(t):
    t = unicodedata.normalize("NFKC", t).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", t).split())


def split_of(qid):
    return "calibration" if int(qid.split("-")[1]) % 2 else "test"


def distinct(model, qid):
    c = cs[qid]
    seen = []
    for s in answer_sentences(answers[model][qid]["markdown"], {x["number"] for x in c["sources"]}):
        if s.text not in [x.text for x in seen]:
            seen.append(s)
    return seen


out, used = [], set()
for line in (ROOT / "bench" / "data" / "claims_labels.tsv").read_text("utf-8").splitlines():
    if not line.strip():
        continue
    model, qid, k, label, evidence, note = (line.rstrip("\n").split("\t") + [""] * 6)[:6]
    sentence = distinct(model, qid)[int(k)]
    c = cs[qid]
    ev = [e.strip() for e in evidence.split("||") if e.strip()]
    for e in ev:
        where = [s["number"] for s in c["sources"] if norm(e) in norm(s["text"])]
        assert where, (qid, k, e)
    if label == "supported":
        assert ev, (qid, k)
    record = {
        "id": f"{qid}/{model}/{k}",
        "question_id": qid,
        "set": c["set"],
        "lang": c["lang"],
        "model": MODELS[model],
        "kind": "real",
        "split": split_of(qid),
        "sentence": sentence.text,
        "cited": list(sentence.sources),
        "label": label,
        "evidence": ev,
        "note": note,
    }
    out.append(record)
    used.add((qid, model))

# Perturbations of the supported real sentences: a wrong number, a wrong source.
rng = random.Random(34)
perturbed = []
for r in out:
    if r["label"] != "supported" or r["kind"] != "real":
        continue
    c = cs[r["question_id"]]
    held = set().union(*(numbers(s["text"] + " " + s["title"]) for s in c["sources"]))
    text = r["sentence"]
    body = text[:-1] if text.endswith(".") else text
    m = next(
        (
            m
            for m in re.finditer(r"\d+", body)
            if not re.search(r"[^\W\d_]", body[m.end() : m.end() + 1] or " ")
        ),
        None,
    )
    if m:
        n = int(m.group())
        new = next(x for x in (n + 7, n + 3, n * 2 + 1, n + 11) if str(x) not in held)
        changed = body[: m.start()] + str(new) + body[m.end() :]
        cite = f" [{r['cited'][0]}]" if r["cited"] else ""
        perturbed.append(
            r
            | {
                "id": r["id"] + "/number",
                "kind": "wrong-number",
                "label": "unsupported",
                "sentence": changed + ".",
                "text": changed + cite + ".",
                "cited": r["cited"][:1],
                "evidence": [],
                "note": f"{n} changed to {new}, a number none of the sources holds",
            }
        )
    wrong = [
        s["number"]
        for s in c["sources"]
        if not any(norm(e) in norm(s["text"]) for e in r["evidence"])
    ]
    if wrong:
        k = rng.choice(wrong)
        perturbed.append(
            r
            | {
                "id": r["id"] + "/source",
                "kind": "wrong-source",
                "label": "unsupported",
                "sentence": body + ".",
                "text": f"{body} [{k}].",
                "cited": [k],
                "evidence": [],
                "note": f"cites source {k}, which holds none of the words that back it",
            }
        )
out += perturbed
with open(DATA + "claims.jsonl", "w", encoding="utf-8") as f:
    for r in out:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
with open(DATA + "claims_answers.jsonl", "w", encoding="utf-8") as f:
    for qid, model in sorted(used):
        a = answers[model][qid]
        f.write(
            json.dumps(
                {
                    "id": qid,
                    "model": MODELS[model],
                    "answer": a["answer"],
                    "markdown": a["markdown"],
                },
                ensure_ascii=False,
            )
            + "\n"
        )
with (
    gzip.GzipFile(DATA + "claims_contexts.jsonl.gz", "wb", mtime=0) as raw,
    io.TextIOWrapper(raw, encoding="utf-8") as f,
):  # no time in the header: the same labels write the same bytes
    for qid in sorted({q for q, _ in used}):
        f.write(json.dumps(cs[qid], ensure_ascii=False) + "\n")
print(len(out), Counter((r["kind"], r["label"]) for r in out))
