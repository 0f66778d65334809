"""The answer report: per-item answers summed up per method/rendering and budget.

Shaped like ``eval qa``'s: ``results[name][budget]`` where ``name`` is ``method/rendering``
(``default/markdown``; a text method is ``chunk-bm25/text``), then per-item results that
keep each answer, the sources as the reader got them and the citations with their
verdicts. Fractions are of questions: ``correct``, ``in_context``, ``cited``,
``citations_hold``, ``check_backed``, ``other_language`` (``grading.py`` says how each is
decided); ``gold_cited_when_correct`` and ``gold_cited_corrected_when_correct``, the share
of right answers whose sentence stating the gold answer cites a source holding it, before
and after the check's corrections;
``cited_when_correct`` is the share of right answers that cite a source, ``cannot_answer``
the share of questions whose answer was not in the context that the reader declined (null
when it always was). Costs are means per question: tokens of the context and of the whole
prompt, seconds to the first piece of the answer (the prefill) and in all, and the judge's
seconds after it (``judge_s``, answers read in this run only: a cached one's judge reads
its prompt cold);
``correct_per_prefill_s`` is right answers per second of prefill, the figure a CPU
reader's default budget is chosen by.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean
from typing import Any

from htmlrag_chat.base.atomic import output_file
from htmlrag_chat.eval.report import dumps_json, grouped, report_json, share, table_row, whole

AnswerSummary = dict[str, float | int | None]


@dataclass(frozen=True)
class AnswerReport:
    budgets: tuple[int, ...]
    names: tuple[str, ...]  # method/rendering, those that ran
    items: list[dict[str, Any]]  # per item: what it is, and "results": {name: {budget: ..}}
    unavailable: dict[str, str]  # method -> why it could not run here
    settings: dict[str, Any]  # the reader, tokenizer, renderings, distractors, code

    def results(self) -> dict[str, dict[str, AnswerSummary]]:
        return {
            name: {str(budget): summarize(self._rows(name, str(budget))) for budget in self.budgets}
            for name in self.names
        }

    def groups(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per group key (language, answer location) and value: the items counted and each
        name's share of right answers per budget."""
        return grouped(self.items, self.names, self.budgets, "correct", "correct")

    def to_json(self) -> dict[str, Any]:
        results, groups = self.results(), self.groups()
        return report_json(results, groups, self.items, self.unavailable, self.settings)

    def _rows(self, name: str, budget: str) -> list[dict[str, Any]]:
        return [item["results"][name][budget] for item in self.items if name in item["results"]]


def summarize(rows: list[dict[str, Any]]) -> AnswerSummary:
    """One cell of the table: shares of questions and mean costs."""
    right = [row for row in rows if row["correct"]]
    lacking = [row for row in rows if not row["in_context"]]
    prefill = _mean(rows, "prefill_s")
    return {
        "items": len(rows),
        "correct": _share(rows, "correct"),
        "in_context": _share(rows, "in_context"),
        "cited": _share(rows, "cited"),
        "citations_hold": _share(rows, "citations_hold"),
        "cited_when_correct": _share(right, "cited"),
        "gold_cited_when_correct": _share(right, "gold_cited"),
        "gold_cited_corrected_when_correct": _share(right, "gold_cited_corrected"),
        "check_backed": _share(rows, "check_backed"),
        "judge_s": _mean(rows, "judge_s"),
        "other_language": _share(rows, "other_language"),
        "cannot_answer": _share(lacking, "declined"),
        "not_in_context": len(lacking),
        "context_tokens": _mean(rows, "context_tokens", 1),
        "prompt_tokens": _mean(rows, "prompt_tokens", 1),
        "prefill_s": prefill,
        "total_s": _mean(rows, "total_s"),
        "correct_per_prefill_s": (
            round(len(right) / len(rows) / prefill, 4) if rows and prefill else None
        ),
    }


def _share(rows: list[dict[str, Any]], key: str) -> float | None:
    return round(fmean(bool(row[key]) for row in rows), 4) if rows else None


def _mean(rows: list[dict[str, Any]], key: str, digits: int = 3) -> float | None:
    values = [row[key] for row in rows if row.get(key) is not None]
    return round(fmean(values), digits) if values else None


def write_report(path: Path, report: AnswerReport, force: bool = False) -> None:
    """The JSON report at ``path`` laid out as ``eval qa``'s (one line per item), gzip-
    compressed when its name ends in ``.gz`` (a grid's answers and sources run to
    megabytes); ``path`` follows the rules of ``atomic.output_file``."""
    data = dumps_json(report.to_json()).encode("utf-8")
    with output_file(path, force=force) as file:
        file.write(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def markdown(report: AnswerReport) -> str:
    """The tables: what the answers got right, their citations, their costs, and right
    answers per language and answer location."""
    results = report.results()
    budgets = [str(budget) for budget in report.budgets]
    reader = report.settings["reader"]
    lines = [
        f"answers: {len(report.items)} questions, reader {reader['model']} ({reader['kind']}), "
        f"tokenizer {report.settings['tokenizer']}",
    ]
    tables: list[tuple[str, Callable[[AnswerSummary], str]]] = [
        ("right answers (answer in the context)", _right),
        ("answers citing a source / whose citations all hold / right answers citing", _citing),
        (
            "right answers whose sentence stating it cites a source holding it: as written / "
            "after the check's corrections",
            _gold,
        ),
        ("answers the check finds backed (after its judge and corrections)", _backed),
        ("'cannot answer' when the context lacks the answer (questions)", _declining),
        ("answers in another language than the question's", lambda s: share(s["other_language"])),
        ("mean context tokens / prompt tokens / prefill s / total s", _costs),
        ("right answers per second of prefill", lambda s: share(s["correct_per_prefill_s"])),
    ]
    for title, cell in tables:
        lines += ["", title, "", table_row(["method/rendering", *budgets])]
        lines.append(table_row(["---", *["---:"] * len(budgets)]))
        for name, summaries in results.items():
            lines.append(table_row([name, *(cell(summaries[budget]) for budget in budgets)]))
    for key, values in report.groups().items():
        lines += ["", f"by {key}: right answers", ""]
        lines += [table_row([key, "method/rendering", *budgets])]
        lines.append(table_row(["---", "---", *["---:"] * len(budgets)]))
        for value, group in values.items():
            for name, shares in group["correct"].items():
                cells = [share(shares[budget]) for budget in budgets]
                lines.append(table_row([f"{value} ({group['items']})", name, *cells]))
    for method, reason in report.unavailable.items():
        lines += ["", f"{method}: unavailable ({reason})"]
    return "\n".join(lines)


def _right(s: AnswerSummary) -> str:
    return f"{share(s['correct'])} ({share(s['in_context'])})"


def _citing(s: AnswerSummary) -> str:
    return f"{share(s['cited'])} / {share(s['citations_hold'])} / {share(s['cited_when_correct'])}"


def _gold(s: AnswerSummary) -> str:
    return (
        f"{share(s['gold_cited_when_correct'])} / {share(s['gold_cited_corrected_when_correct'])}"
    )


def _backed(s: AnswerSummary) -> str:
    judge = "" if s["judge_s"] is None else f" (judge {_f(s['judge_s'])} s)"
    return share(s["check_backed"]) + judge


def _declining(s: AnswerSummary) -> str:
    return f"{share(s['cannot_answer'])} ({s['not_in_context']})"


def _costs(s: AnswerSummary) -> str:
    tokens = f"{whole(s['context_tokens'])} / {whole(s['prompt_tokens'])}"
    return f"{tokens} / {_f(s['prefill_s'])} / {_f(s['total_s'])}"


def _f(value: float | int | None) -> str:
    return "-" if value is None else f"{value:.1f}"
