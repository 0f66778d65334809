"""A report as a Markdown document (``research --markdown FILE``, and what ``research`` prints).

The question as its title, the short answer, each part under its heading with the evidence
of its sentences (the quotes, the corrected citations, the flags: as a conversation's
export shows them, ``conversations.export.evidence_markdown``), then the references. Text
from pages and models is text, never markup: raw HTML is escaped (``no_raw_html``) and links
keep web pages and files only (``markdown_safe``), as in every exported conversation.
"""

from __future__ import annotations

from htmlrag_chat.base.progress import PARTS_MADE
from htmlrag_chat.base.safety import markdown_safe, no_raw_html, one_line, safe_url
from htmlrag_chat.base.sources import Source
from htmlrag_chat.conversations.export import evidence_markdown
from htmlrag_chat.evidence.words import flag_lines
from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.research.progress import duration
from htmlrag_chat.research.report import Report, Section, section_text

STOPPED_LINE = "Stopped before every part was answered: the same research again resumes it."


def report_markdown(report: Report) -> str:
    lines = [f"# {_line(report.question) or 'Research'}", "", f"_{escape_markdown(made(report))}_"]
    if report.stopped:
        lines += ["", f"_{STOPPED_LINE}_"]
    lines.append("")
    if report.single:
        lines += _section(report.sections[0])
    else:
        lines += [f"**Short answer.** {' '.join(report.short_answer(markdown=True))}", ""]
        for section in report.sections:
            lines += [f"## {section.number}. {_line(section.part)}", "", *_section(section)]
    lines += ["## References", "", *_references(report)]
    # Text from pages and models, the short answer's sentences included: never markup.
    return markdown_safe(no_raw_html("\n".join(lines).rstrip() + "\n"))


def made(report: Report) -> str:
    """Who researched it, in how many parts, in how long."""
    parts = len(report.sections)
    count = f"{parts} part{'s' if parts != 1 else ''} {PARTS_MADE[report.how]}"
    took = duration(report.total_ms / 1000)
    by = one_line(report.model) or report.reader
    return f"Researched by {by} ({report.reader}), {count}, in {took}."


def _section(section: Section) -> list[str]:
    lines = [section_text(section).strip(), ""]
    lines += evidence_markdown(section.claims)
    flags = flag_lines(section.claims)
    lines += [f"> ! {escape_markdown(flag)}" for flag in flags]
    return [*lines, ""] if flags else lines


def _references(report: Report) -> list[str]:
    if not report.references:
        return ["None: no part found a source.", ""]
    cited, found = report.cited_numbers, report.found_numbers
    lines = []
    for source in report.references:
        how = "" if source.number in cited else _uncited(source, found)
        lines.append(f"{source.number}. {_reference(source)}{how}")
    return [*lines, ""]


def _reference(source: Source) -> str:
    """A web page as a link; a local file by its title and path, as text (a Markdown
    document keeps links to web pages only)."""
    url = safe_url(source.url)
    label = no_raw_html(one_line(source.title)) or url
    if source.local:
        return f"{_line(source.title) or 'Untitled'}: {_line(url)}"
    return f"[{_link_text(label)}](<{url}>)"


def _uncited(source: Source, found: set[int]) -> str:
    if source.number in found:
        return " (not cited; the check found it backing a sentence)"
    return " (read, not cited)"


def _line(text: str) -> str:
    return no_raw_html(escape_markdown(one_line(text)))


def _link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")
