"""The labelled sets of ``bench/claims.py`` from the labels read by hand.

A labels file holds one line per distinct sentence of a set's answers (model, question id,
the sentence's place among the answer's distinct sentences, label, the source words that
back it separated by ``||``, why). This checks every such word to be in a source of the
question, adds the perturbed sentences (a wrong number, a wrong source) of every supported
one, and writes the set, the answers labelled and their contexts to ``bench/data``:

- the dev set (``claims_labels.tsv`` → ``claims.jsonl``, ``claims_answers.jsonl``,
  ``claims_contexts.jsonl.gz``): the answers ``bench/claims_answers.py`` wrote;
- the held-out set (``--held-out``: ``claims_holdout_labels.tsv`` → ``claims_holdout.jsonl``,
  ``claims_holdout_answers.jsonl``, ``claims_holdout_contexts.jsonl.gz``): Qwen2.5-Coder-1.5B's
  answers to the held-out questions, read from the reports of ``eval answers`` (the cell
  ``default/html`` at 1,024 tokens, what ``ask`` gives); ``--name claims_holdout2`` for the
  second one, the same questions answered with the reader's prompt of 6a22a5b.

    .venv/bin/python bench/claims_labels.py --answers DIR --contexts FILE
    .venv/bin/python bench/claims_labels.py --held-out answers_qwen_qa_en_holdout_1024.json.gz \\
        answers_qwen_qa_lang_holdout_1024.json.gz
    .venv/bin/python bench/claims_labels.py --name claims_holdout2 --held-out \\
        answers_qwen_qa_en_holdout_1024_prompt2.json.gz \\
        answers_qwen_qa_lang_holdout_1024_prompt2.json.gz
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
from typing import Any

from benchlib import ROOT
from htmlrag_chat.evidence.matching import numbers
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.reader.citations import answer_sentences

MODELS = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "qwen": "Qwen2.5-Coder-1.5B-Instruct-Q4.gguf",
}
HELD_OUT_CELL = ("default/html", "1024")  # what ``ask`` gives: the default recipe, 1,024 tokens
DATA = ROOT / "bench" / "data"


def norm(t):
    t = unicodedata.normalize("NFKC", t).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", t).split())


def dev_split(qid):
    return "calibration" if int(qid.split("-")[1]) % 2 else "test"


def held_out_split(qid):
    return "held-out"


def dev_inputs(answers_dir: Path, contexts: Path):
    """The dev contexts, and each (model, question)'s answer as the reader wrote it."""
    cs = {c["id"]: c for c in map(json.loads, contexts.open(encoding="utf-8"))}
    answers = {
        (m, a["id"]): a
        for m in MODELS
        for a in map(json.loads, (answers_dir / f"{m}.jsonl").open(encoding="utf-8"))
    }
    return cs, answers


def held_out_inputs(reports: list[Path]):
    """The contexts and Qwen's answers of the held-out questions, from ``eval answers``
    reports: a source's text is its pruned HTML's visible text, as the product reads it."""
    cs, answers = {}, {}
    for report in reports:
        with gzip.open(report, "rt", encoding="utf-8") as f:
            data = json.load(f)
        name = Path(data["settings"]["dataset"]).stem
        for item in data["items"]:
            cell = item["results"][HELD_OUT_CELL[0]][HELD_OUT_CELL[1]]
            sources = [
                {
                    "number": s["number"],
                    "url": s["url"],
                    "title": s["title"],
                    "html": s["content"],
                    "text": visible_text(parse(s["content"]), lines=True),
                }
                for s in cell["sources"]
            ]
            cs[item["id"]] = {
                "id": item["id"],
                "set": name,
                "lang": item["lang"],
                "question": item["question"],
                "answers": item["answers"],
                "sources": sources,
            }
            # an LLM reader's answer is the Markdown the checker reads
            answers[("qwen", item["id"])] = {"answer": cell["answer"], "markdown": cell["answer"]}
    return cs, answers


def distinct(cs, answers, model, qid):
    seen = []
    numbers_ = {x["number"] for x in cs[qid]["sources"]}
    for s in answer_sentences(answers[(model, qid)]["markdown"], numbers_):
        if s.text not in [x.text for x in seen]:
            seen.append(s)
    return seen


def labelled(labels: Path, cs, answers, split_of) -> list[dict[str, Any]]:
    """The labelled real sentences, every evidence word found in a source."""
    out = []
    for line in labels.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        model, qid, k, label, evidence, note = (line.rstrip("\n").split("\t") + [""] * 6)[:6]
        sentence = distinct(cs, answers, model, qid)[int(k)]
        c = cs[qid]
        ev = [e.strip() for e in evidence.split("||") if e.strip()]
        for e in ev:
            where = [s["number"] for s in c["sources"] if norm(e) in norm(s["text"])]
            assert where, (qid, k, e)
        if label == "supported":
            assert ev, (qid, k)
        out.append(
            {
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
        )
    return out


def perturbed(real: list[dict[str, Any]], cs) -> list[dict[str, Any]]:
    """Perturbations of the supported real sentences: a wrong number, a wrong source."""
    rng = random.Random(34)
    out = []
    for r in real:
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
            out.append(
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
            out.append(
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
    return out


def write(name: str, out: list[dict[str, Any]], cs, answers) -> None:
    """``name``.jsonl (the set), ``name``_answers.jsonl and ``name``_contexts.jsonl.gz."""
    used = {(r["question_id"], m) for r in out for m in MODELS if MODELS[m] == r["model"]}
    with open(DATA / f"{name}.jsonl", "w", encoding="utf-8") as f:
        for r in out:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(DATA / f"{name}_answers.jsonl", "w", encoding="utf-8") as f:
        for qid, model in sorted(used):
            a = answers[(model, qid)]
            record = {
                "id": qid,
                "model": MODELS[model],
                "answer": a["answer"],
                "markdown": a["markdown"],
            }
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    with (
        gzip.GzipFile(DATA / f"{name}_contexts.jsonl.gz", "wb", mtime=0) as raw,
        io.TextIOWrapper(raw, encoding="utf-8") as f,
    ):  # no time in the header: the same labels write the same bytes
        for qid in sorted({q for q, _ in used}):
            f.write(json.dumps(cs[qid], ensure_ascii=False) + "\n")
    print(name, len(out), Counter((r["kind"], r["label"]) for r in out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--answers", type=Path, help="smollm2.jsonl and qwen.jsonl (dev set)")
    parser.add_argument("--contexts", type=Path, help="the dev contexts")
    parser.add_argument(
        "--held-out", type=Path, nargs="+", help="eval answers reports of the held-out sets"
    )
    parser.add_argument(
        "--name", help="the set: its labels are NAME_labels.tsv (default: claims, claims_holdout)"
    )
    args = parser.parse_args()
    if args.held_out:
        cs, answers = held_out_inputs(args.held_out)
        name, split_of = args.name or "claims_holdout", held_out_split
    elif args.answers and args.contexts:
        cs, answers = dev_inputs(args.answers, args.contexts)
        name, split_of = args.name or "claims", dev_split
    else:
        parser.error("give --answers and --contexts (the dev set), or --held-out")
    labels = DATA / f"{name}_labels.tsv"
    real = labelled(labels, cs, answers, split_of)
    write(name, real + perturbed(real, cs), cs, answers)


if __name__ == "__main__":
    main()
