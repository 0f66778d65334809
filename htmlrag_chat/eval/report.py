"""The report: per-item results summed up per method and budget, as JSON and Markdown.

``recall`` is the share of ``with`` snippets kept over all pages (retention) or the share of
questions whose gold answer is in the context (QA); ``leakage`` the share of ``without``
snippets kept (retention; null for QA); ``tokens`` the mean tokens of the context handed to
the reader and ``ms`` the mean time per item to make it from the page bytes. QA items that
carry a ``lang`` or ``location`` are also counted per language and per answer location
(``groups``), since a method can hold overall and fail in one language or in tables.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from statistics import fmean
from typing import Any

Summary = dict[str, float | None]
GROUP_KEYS = ("lang", "location")  # item fields the QA figures are broken down by


@dataclass(frozen=True)
class EvalReport:
    task: str
    budgets: tuple[int, ...]
    methods: tuple[str, ...]  # those that ran
    items: list[dict[str, Any]]  # per item: what it is, and "results": {method: {budget: ..}}
    unavailable: dict[str, str]  # method -> why it could not run here
    settings: dict[str, Any]  # what the figures depend on: tokenizer, models, distractors

    def results(self) -> dict[str, dict[str, Summary]]:
        return {
            method: {str(budget): self._summary(method, str(budget)) for budget in self.budgets}
            for method in self.methods
        }

    def groups(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Per group key and value: the items counted and each method's share of answers
        kept per budget (QA items that carry the key)."""
        return grouped(self.items, self.methods, self.budgets, "answer", "recall")

    def to_json(self) -> dict[str, Any]:
        results, groups = self.results(), self.groups()
        return report_json(results, groups, self.items, self.unavailable, self.settings)

    def _summary(self, method: str, budget: str) -> Summary:
        rows = [item["results"][method][budget] for item in self.items]
        if not rows:
            return {"recall": None, "leakage": None, "tokens": None, "ms": None}
        if self.task == "retention":
            recall = _share(sum(r["with_kept"] for r in rows), sum(i["with"] for i in self.items))
            leakage = _share(
                sum(r["without_kept"] for r in rows), sum(i["without"] for i in self.items)
            )
        else:
            recall, leakage = round(fmean(r["answer"] for r in rows), 4), None
        return {
            "recall": recall,
            "leakage": leakage,
            "tokens": round(fmean(r["tokens"] for r in rows), 1),
            "ms": round(fmean(r["ms"] for r in rows), 1),
        }


def grouped(
    items: list[dict[str, Any]],
    names: tuple[str, ...],
    budgets: tuple[int, ...],
    field: str,
    label: str,
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per group key (``GROUP_KEYS``) and value: the items that carry it and, under
    ``label``, each name's share per budget of results whose ``field`` is true."""
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for key in GROUP_KEYS:
        for value in sorted({item[key] for item in items if item.get(key)}):
            members = [item["results"] for item in items if item.get(key) == value]
            shares = {
                name: {
                    str(budget): round(fmean(bool(m[name][str(budget)][field]) for m in members), 4)
                    for budget in budgets
                }
                for name in names
            }
            groups.setdefault(key, {})[value] = {"items": len(members), label: shares}
    return groups


def report_json(
    results: dict[str, Any],
    groups: dict[str, Any],
    items: list[dict[str, Any]],
    unavailable: dict[str, str],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """A report as JSON: ``groups`` only when some item carries a group key."""
    return {
        "results": results,
        **({"groups": groups} if groups else {}),
        "items": items,
        "unavailable": unavailable,
        "settings": settings,
    }


def dumps(report: EvalReport) -> str:
    """The JSON report: the summary indented, then one line per item, so the file stays
    readable and a diff between two runs shows which items changed."""
    return dumps_json(report.to_json())


def dumps_json(data: dict[str, Any]) -> str:
    """A report's JSON (``results``, ``groups`` when there are any, ``items``, ``unavailable``,
    ``settings``) laid out as ``dumps`` says."""
    items = ",\n".join(json.dumps(item, ensure_ascii=False) for item in data["items"])
    parts = [f'"results": {json.dumps(data["results"], indent=1)}']
    if "groups" in data:
        parts.append(f'"groups": {json.dumps(data["groups"], indent=1, ensure_ascii=False)}')
    parts += [
        f'"items": [\n{items}\n]',
        f'"unavailable": {json.dumps(data["unavailable"], ensure_ascii=False)}',
        f'"settings": {json.dumps(data["settings"], ensure_ascii=False)}',
    ]
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def markdown(report: EvalReport) -> str:
    """Two method x budget tables: what was kept, then what it cost."""
    results = report.results()
    budgets = [str(budget) for budget in report.budgets]
    if report.task == "retention":
        what = "`with` snippets kept / `without` snippets kept (lower is better)"
    else:
        what = "questions whose gold answer is in the context"
    lines = [
        f"{report.task}: {len(report.items)} items, tokenizer {report.settings['tokenizer']}; "
        f"cells: {what}",
        "",
        table_row(["method", *budgets]),
        table_row(["---", *["---:"] * len(budgets)]),
    ]
    for method, summaries in results.items():
        cells = []
        for budget in budgets:
            summary = summaries[budget]
            cell = share(summary["recall"])
            if report.task == "retention":
                cell += f" / {share(summary['leakage'])}"
            cells.append(cell)
        lines.append(table_row([method, *cells]))
    lines += [
        "",
        "mean context tokens / mean ms per item",
        "",
        table_row(["method", *budgets]),
        table_row(["---", *["---:"] * len(budgets)]),
    ]
    for method, summaries in results.items():
        cells = [f"{whole(s['tokens'])} / {whole(s['ms'])}" for s in summaries.values()]
        lines.append(table_row([method, *cells]))
    for key, values in report.groups().items():
        lines += ["", f"by {key}: questions whose gold answer is in the context", ""]
        lines += [
            table_row([key, "method", *budgets]),
            table_row(["---", "---", *["---:"] * len(budgets)]),
        ]
        for value, group in values.items():
            for method, recalls in group["recall"].items():
                cells = [share(recalls[budget]) for budget in budgets]
                lines.append(table_row([f"{value} ({group['items']})", method, *cells]))
    for method, reason in report.unavailable.items():
        lines += ["", f"{method}: unavailable ({reason})"]
    return "\n".join(lines)


def table_row(cells: list[str]) -> str:
    """A Markdown table row (the reports of ``eval`` and ``eval answers``); a ``|`` in a
    cell (a dataset's label) stays in its cell."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def whole(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"
