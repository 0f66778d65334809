"""The evidence check's judge (``evidence/judging.py``) on the labelled sets: how often its
flags are right, how many right sentences get a backing quote, what its corrections point
at, and the seconds it adds to an answer.

Each labelled answer (a real answer whole; a perturbed sentence as the answer it would be)
is checked as ``ask`` checks it with a judge: ``check_answer`` with the judge's band, the
reader model asked Yes or No in a message that continues the answer's own call
(``agent.checking.Checker.ask``, ``reader.layout.judge_messages``), then the corrections.
Before the clock starts the answer's prompt and the answer are read into the model's state,
as ``ask``'s state holds them when the check starts; the judge's seconds are those of its
own questions.

To choose the band, every quote the widest check keeps is judged once (the verdicts are
kept in the report, so another band costs no model call: ``--verdicts FILE`` reads them
back), and the figures are worked out for each band of ``BANDS``: on the dev set's
calibration half, the band whose flags reach the targets with the fewest questions asked;
then the shipped band (``evidence.judging.BAND``) is reported on the test half and the two
blind held-out sets, overall and by language. A sentence counts as caught when it is
flagged, or when its citation was corrected (the answer no longer shows it); quotes shown
are the backing quotes of the sentences neither flagged nor corrected.

Usage: ``python bench/claims_judge.py --model QWEN.gguf`` (``--sets``, ``--name``).
Writes bench/results/claims_judge[_NAME].json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import ROOT, write_report
from claims import holds_evidence, load, sources_of
from htmlrag_chat.agent.checking import Checker
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, check_answer
from htmlrag_chat.evidence.correction import correct
from htmlrag_chat.evidence.judging import BAND, MAX_PAIRS, apply, pairs_of, uncertain
from htmlrag_chat.reader import Message
from htmlrag_chat.reader.layout import answer_messages
from htmlrag_chat.reader.llama_cpp_chat import LlamaCppChat

WIDE = (0.0, 1.01)  # every quote the check keeps
BANDS = [(low / 100, high / 100) for low in range(10, 60, 10) for high in (70, 80, 90, 101)]
TARGET = 0.8  # the precision and recall


@dataclass
class Answered:
    """One answer of a labelled set, with the labels of its sentences."""

    name: str  # the set
    question: str
    sources: list[Source]
    markdown: str
    labels: list[dict[str, Any]]
    verdicts: dict[tuple[str, str, int], float | None] = field(default_factory=dict)
    seconds: dict[tuple[str, str, int], float] = field(default_factory=dict)
    prefill_s: float | None = None  # reading the answer's prompt and the answer in


def answers_of(name: str) -> list[Answered]:
    """The set's answers, those of one question together (they share the answer's prompt
    up to its question: the model's state serves the next)."""
    contexts, answers, labels = load(name)
    found: dict[tuple[str, ...], Answered] = {}
    for label in labels:
        context = contexts[label["question_id"]]
        if label["kind"] == "real":
            key = (label["question_id"], label["model"])
            markdown = answers[key]
        else:
            key = (label["question_id"], label["model"], label["id"])
            markdown = label["text"]
        if key not in found:
            found[key] = Answered(name, context["question"], sources_of(context), markdown, [])
        found[key].labels.append(label)
    return sorted(found.values(), key=lambda a: a.question)


async def judge_all(model: LlamaCppChat, answered: Answered, alone: bool) -> None:
    """Every pair of the widest check judged, after the answer's prompt is read in (each
    question on its own with ``alone``: then nothing is read in first)."""
    checker = Checker(model, alone=alone)
    claims = check_answer(answered.question, answered.markdown, answered.sources, band=WIDE)
    pairs = pairs_of(claims, uncertain(claims, limit=10**6, band=WIDE))
    if not pairs:
        return
    if alone:
        for pair in pairs:
            started = time.perf_counter()
            [verdict] = await checker.ask(answered.question, answered.sources, (), "", [pair])
            key = (pair.sentence, pair.passage, pair.source)
            answered.verdicts[key] = verdict
            answered.seconds[key] = time.perf_counter() - started
        return
    prompt = [
        *answer_messages(answered.question, answered.sources),
        Message("assistant", answered.markdown),
        Message("user", "Reply with one word: Yes or No."),
    ]
    started = time.perf_counter()
    await model.yes_probabilities([prompt])  # ask's state when the check starts
    answered.prefill_s = time.perf_counter() - started
    for pair in pairs:
        started = time.perf_counter()
        [verdict] = await checker.ask(
            answered.question, answered.sources, (), answered.markdown, [pair]
        )
        key = (pair.sentence, pair.passage, pair.source)
        answered.verdicts[key] = verdict
        answered.seconds[key] = time.perf_counter() - started


def settled(answered: Answered, band: tuple[float, float] | None) -> tuple[list[Claim], float]:
    """The claims as ``ask`` shows them with a judge on ``band`` (None: no judge), and the
    seconds the judge's questions took."""
    claims = check_answer(answered.question, answered.markdown, answered.sources, band=band)
    seconds = 0.0
    if band is not None:
        asked = uncertain(claims, MAX_PAIRS, band)
        pairs = pairs_of(claims, asked)
        keys = [(p.sentence, p.passage, p.source) for p in pairs]
        claims = apply(claims, asked, [answered.verdicts.get(k) for k in keys])
        seconds = sum(answered.seconds.get(k, 0.0) for k in keys)
    return correct(claims), seconds


def figures(
    answers: Sequence[Answered],
    band: tuple[float, float] | None,
    kind: str | None = None,
    everything: Sequence[Answered] = (),
) -> dict[str, Any]:
    """Flags and corrections against the labels (those of ``kind`` only, when given: the
    real sentences, or one kind of perturbation); quotes shown; the judge's seconds. A
    correction is right when its quote holds the words that back the real sentence the
    perturbed one was made from (found among ``everything``, else ``answers``)."""
    evidence = {
        (label["question_id"], label["model"], label["sentence"]): label
        for answered in everything or answers
        for label in answered.labels
        if label["kind"] == "real" and label["label"] == "supported"
    }
    tp = fp = fn = 0
    cited_right = cited_right_quoted = shown = holding = 0
    corrected = corrected_right = asked_answers = 0
    times = []
    prefills = [a.prefill_s for a in answers if a.prefill_s is not None]
    for answered in answers:
        claims, seconds = settled(answered, band)
        times.append(seconds)
        asked_answers += seconds > 0
        by_sentence = {claim.sentence: claim for claim in claims}
        for label in answered.labels:
            if label["label"] == "none" or kind not in (None, label["kind"]):
                continue
            claim = by_sentence.get(label["sentence"])
            if claim is None or not claim.checked:
                fn += label["label"] == "unsupported"
                continue
            moved = bool(claim.cited and claim.corrected)
            caught = not claim.supported or moved
            wrong = label["label"] == "unsupported"
            tp += caught and wrong
            fp += caught and not wrong
            fn += wrong and not caught
            if moved:
                corrected += 1
                real = evidence.get((label["question_id"], label["model"], label["sentence"]))
                quote = next(q for q in claim.backing if q.source in claim.corrected)
                corrected_right += holds_evidence(real or label, quote.text)
            if label["kind"] == "real" and not wrong and label["cited"]:
                cited_right += 1
                cited_right_quoted += not caught and bool(claim.backing)
            if not caught:
                for quote in claim.backing:
                    shown += 1
                    holding += holds_evidence(label, quote.text)
    return {
        "flag_precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "flag_recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "caught": tp,
        "false_flags": fp,
        "missed": fn,
        "corrected": corrected,
        "corrected_to_the_source_that_holds_it": corrected_right,
        "right_cited_sentences": cited_right,
        "right_cited_with_a_backing_quote": cited_right_quoted,
        "quotes_shown": shown,
        "quotes_holding_the_evidence": holding,
        "answers": len(answers),
        "answers_judged": asked_answers,
        "judge_s_per_answer": round(statistics.fmean(times), 3) if times else None,
        "judge_s_max": round(max(times), 3) if times else None,
        "answer_prefill_s": round(statistics.fmean(prefills), 3) if prefills else None,
    }


def chosen(calibration: Sequence[Answered]) -> dict[str, Any]:
    """Every band's figures on the calibration half, and the band that reaches the targets
    with the least judging (else the best sum of precision and recall)."""
    grid = {f"{low:.2f}-{high:.2f}": figures(calibration, (low, high)) for low, high in BANDS}
    meeting = [
        name
        for name, found in grid.items()
        if (found["flag_precision"] or 0) >= TARGET and (found["flag_recall"] or 0) >= TARGET
    ]
    pool = meeting or list(grid)
    best = min(
        pool,
        key=lambda n: (
            -(grid[n]["flag_precision"] or 0) - (grid[n]["flag_recall"] or 0)
            if not meeting
            else grid[n]["judge_s_per_answer"] or 0.0
        ),
    )
    return {"best": best, "meeting_targets": meeting, "grid": grid}


def by_language(answers: Sequence[Answered], band: tuple[float, float] | None) -> dict:
    languages = sorted({label["lang"] for a in answers for label in a.labels})
    return {
        lang: figures(
            [a for a in answers if any(label["lang"] == lang for label in a.labels)], band
        )
        for lang in languages
    }


def by_kind(answers: Sequence[Answered], band: tuple[float, float] | None) -> dict:
    """Real sentences alone (the issue's precision and recall), and each perturbed kind."""
    return {
        kind: figures(
            [a for a in answers if any(label["kind"] == kind for label in a.labels)],
            band,
            kind,
            answers,
        )
        for kind in ("real", "wrong-number", "wrong-source")
    }


def report_set(answers: Sequence[Answered]) -> dict[str, Any]:
    return {
        "without_judge": figures(answers, None),
        "with_judge": figures(answers, BAND),
        "by_kind_without_judge": by_kind(answers, None),
        "by_kind_with_judge": by_kind(answers, BAND),
        "with_judge_by_language": by_language(answers, BAND),
        "bands": {f"{low:.2f}-{high:.2f}": figures(answers, (low, high)) for low, high in BANDS},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="the GGUF chat model that judges")
    parser.add_argument("--sets", default="claims_holdout2,claims_holdout,claims")
    parser.add_argument("--name", default="", help="a suffix for the report's file name")
    parser.add_argument("--verdicts", type=Path, help="a report whose verdicts to read back")
    parser.add_argument(
        "--alone", action="store_true", help="each question on its own, not after the answer"
    )
    args = parser.parse_args()
    out = ROOT / "bench" / "results" / f"claims_judge{'_' + args.name if args.name else ''}.json"
    kept = _verdicts(args.verdicts) if args.verdicts else {}
    model = LlamaCppChat(args.model)
    sets = {name: answers_of(name) for name in args.sets.split(",")}
    started = time.perf_counter()
    for name, answers in sets.items():
        for index, answered in enumerate(answers):
            ids = {label["id"] for label in answered.labels}
            if ids <= set(kept):
                answered.verdicts, answered.seconds = _restored(kept, ids)
                answered.prefill_s = _prefill(kept, ids)
            else:
                asyncio.run(judge_all(model, answered, args.alone))
            print(f"{name} {index + 1}/{len(answers)} {time.perf_counter() - started:.0f} s")
    report: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, llama.cpp on the CPU; load average "
        f"{os.getloadavg()[0]:.1f} when it started",
        "judge": Path(args.model).name,
        "layout": "each question on its own" if args.alone else "after the answer's call",
        "shipped_band": list(BAND),
        "max_pairs": MAX_PAIRS,
    }
    if "claims" in sets:
        dev = sets["claims"]
        calibration = [a for a in dev if a.labels[0]["split"] == "calibration"]
        test = [a for a in dev if a.labels[0]["split"] == "test"]
        report["calibration"] = chosen(calibration)
        report["test"] = report_set(test)
        for model_name in sorted({a.labels[0]["model"] for a in test}):
            mine = [a for a in test if a.labels[0]["model"] == model_name]
            report[f"test_answers_of_{model_name}"] = report_set(mine)
    for name in ("claims_holdout", "claims_holdout2"):
        if name in sets:
            report[name] = report_set(sets[name])
    report["verdicts"] = {
        label["id"]: [
            {"sentence": k[0], "passage": k[1], "source": k[2], "p": v, "s": answered.seconds[k]}
            | {"prefill_s": answered.prefill_s}
            for k, v in answered.verdicts.items()
        ]
        for answers in sets.values()
        for answered in answers
        for label in answered.labels
    }
    write_report(out, report)


def _verdicts(path: Path) -> dict[str, list[dict[str, Any]]]:
    return json.loads(path.read_text(encoding="utf-8"))["verdicts"]


def _restored(kept: dict[str, list[dict[str, Any]]], ids: set[str]) -> tuple[dict, dict]:
    verdicts, seconds = {}, {}
    for label_id in ids:
        for v in kept[label_id]:
            key = (v["sentence"], v["passage"], v["source"])
            verdicts[key], seconds[key] = v["p"], v["s"]
    return verdicts, seconds


def _prefill(kept: dict[str, list[dict[str, Any]]], ids: set[str]) -> float | None:
    found = [v.get("prefill_s") for label_id in ids for v in kept[label_id]]
    return next((s for s in found if s is not None), None)


if __name__ == "__main__":
    main()
