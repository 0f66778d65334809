"""Would a reader model, asked "does this passage say this?", lift the share of quotes that
support their sentence (issue 34's target: 90%, not met by words and numbers alone)?

The evidence check shows a quote under each sentence it does not flag; on the dev set many
of those sentences are wrong in how their words relate (a year moved to another city, a
row copied as the answer), which words cannot see. Here each quote the check shows (the
labelled sets of ``bench/claims.py``, at the shipped ``THRESHOLD``) goes to a GGUF chat
model with the question, the sentence and the passage, and the model's probability of
"yes" against "no" for its first token decides whether the quote stays. The judge's
threshold is the lowest of 0.30..0.70 at which the calibration half's kept quotes reach
90%, else the one that keeps the best share there; the test half and the held-out set
are reported at it: quotes kept, the share of them that support their sentence, and how
many supporting quotes the judge dropped (each becomes a flag on a right sentence).

Not part of the product: the judge's prompt lives here, as its wording is the experiment.
Usage: ``python bench/claims_judge.py --model QWEN.gguf``. Writes
bench/results/claims_judge.json.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import ROOT, quantiles, write_report
from claims import holds_evidence, judged, load, quotes_counted
from htmlrag_chat.evidence.claims import THRESHOLD
from htmlrag_chat.reader.gguf import extra_buffers, extra_buffers_wanted

SYSTEM = (
    "You check whether a passage from a web page states what a sentence says. "
    "Answer only yes or no."
)
ASK = (
    "Question asked: {question}\n\nSentence of the answer: {sentence}\n\nPassage: {passage}\n\n"
    "Does the passage state what the sentence says, as an answer to the question? "
    "Answer yes or no."
)
GRID = [round(0.30 + 0.05 * step, 2) for step in range(9)]  # judge thresholds: 0.30 .. 0.70
TARGET = 0.9


@dataclass(frozen=True)
class Judged:
    """One quote the check shows, with the judge's verdict."""

    split: str
    supports: bool  # the quote holds the words the label gives as the sentence's evidence
    added: bool  # found by the checker for a sentence that cites nothing
    p_yes: float
    seconds: float


class Judge:
    """A GGUF chat model that answers yes or no; its first token's probabilities."""

    def __init__(self, model: str) -> None:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import llama_cpp

        threads = os.cpu_count() or 1
        with extra_buffers(extra_buffers_wanted()):
            self.llama = llama_cpp.Llama(
                model_path=model,
                n_ctx=2048,
                n_threads=threads,
                logits_all=True,  # llama-cpp-python gives logprobs only so
                verbose=False,
            )

    def p_yes(self, question: str, sentence: str, passage: str) -> float:
        """P("yes") / (P("yes") + P("no")) over the first token's 20 likeliest."""
        prompt = ASK.format(question=question, sentence=sentence, passage=passage)
        out = self.llama.create_chat_completion(
            messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
            max_tokens=1,
            temperature=0,
            logprobs=True,
            top_logprobs=20,
        )
        mass = {"yes": 0.0, "no": 0.0}
        for candidate in out["choices"][0]["logprobs"]["content"][0]["top_logprobs"]:
            word = candidate["token"].strip().lower()
            if word in mass:
                mass[word] += math.exp(candidate["logprob"])
        total = mass["yes"] + mass["no"]
        return mass["yes"] / total if total else 0.5


def judged_quotes(judge: Judge, name: str) -> list[Judged]:
    """Every quote whose support ``bench/claims.py`` counts on the set ``name`` (at the
    shipped ``THRESHOLD``), judged."""
    contexts, answers, labels = load(name)
    out = []
    for label, claim in judged(contexts, answers, labels, None):
        question = contexts[label["question_id"]]["question"]
        for quote in quotes_counted(label, claim, THRESHOLD):
            started = time.perf_counter()
            p_yes = judge.p_yes(question, claim.sentence, quote.text)
            seconds = time.perf_counter() - started
            split = label.get("split", "held-out")
            out.append(
                Judged(split, holds_evidence(label, quote.text), quote.added, p_yes, seconds)
            )
    return out


def kept(quotes: list[Judged], threshold: float) -> dict[str, Any]:
    """What the judge leaves at ``threshold``: quotes kept, the share supporting their
    sentence, and the supporting quotes it dropped."""
    stay = [q for q in quotes if q.p_yes >= threshold]
    good = sum(q.supports for q in stay)
    return {
        "judge_threshold": threshold,
        "quotes_kept": len(stay),
        "quotes_supporting": round(good / len(stay), 3) if stay else None,
        "supporting_dropped": sum(q.supports for q in quotes) - good,
    }


def calibrated(quotes: list[Judged]) -> float:
    for threshold in GRID:
        share = kept(quotes, threshold)["quotes_supporting"]
        if share is not None and share >= TARGET:
            return threshold
    return max(GRID, key=lambda t: (kept(quotes, t)["quotes_supporting"] or 0.0, -t))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a GGUF chat model to judge with")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "bench" / "results" / "claims_judge.json"
    )
    args = parser.parse_args()
    judge = Judge(args.model)
    dev = judged_quotes(judge, "claims")
    held = judged_quotes(judge, "claims_holdout")
    calibration = [q for q in dev if q.split == "calibration"]
    test = [q for q in dev if q.split == "test"]
    threshold = calibrated(calibration)
    report = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, llama.cpp on the CPU; load average "
        f"{os.getloadavg()[0]:.1f} when it started",
        "judge": os.path.basename(args.model),
        "check_threshold": THRESHOLD,
        "judge_threshold": threshold,
        "seconds_per_quote": quantiles([q.seconds for q in dev + held]),
        "calibration": {
            "without_judge": kept(calibration, 0.0),
            "grid": [kept(calibration, t) for t in GRID],
        },
        "test": {"without_judge": kept(test, 0.0), "with_judge": kept(test, threshold)},
        "held_out": {"without_judge": kept(held, 0.0), "with_judge": kept(held, threshold)},
        "quotes": [q.__dict__ for q in dev + held],
    }
    write_report(args.out, report)


if __name__ == "__main__":
    main()
