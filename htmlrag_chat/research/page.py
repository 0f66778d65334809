"""A report as one self-contained HTML file (``research --html FILE``): open it anywhere.

Nothing in it loads from elsewhere: the style is inline, there is no script, no image and no
font, and a Content-Security-Policy of ``default-src 'none'`` says so to the browser, so a
report opened from a mail or a share loads nothing and tells no server it was read. Links go
to the references only, with no referrer. Everything in it from pages and models (the
question, the parts, the answers, the quotes, titles and URLs) is text: escaped as HTML,
its control characters, bidi overrides and control tokens defused first (``text_safe``),
URLs percent-encoded where a character could fake them (``safe_url``) and linked only when
they are web pages or files.

Each sentence stands with its evidence at hand: hovering it shows its quotes (a ``title``
tooltip), and its footnote number leads to them in full under its part, with the
citation the check corrected and the flag of a sentence no source backs.
"""

from __future__ import annotations

from html import escape
from urllib.parse import urlsplit

from htmlrag_chat.base.safety import one_line, safe_url, text_safe
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim
from htmlrag_chat.evidence.correction import MARK
from htmlrag_chat.evidence.words import problem, quote_line, shown_quotes
from htmlrag_chat.research.export import STOPPED_LINE, made
from htmlrag_chat.research.report import Report, Section, section_text

POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
LINKED = ("http", "https", "file")  # the schemes a reference links to
STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto;
       padding: 0 1rem; color: #1a1a1a; background: #fff; }
h1 { font-size: 1.6rem; } h2 { font-size: 1.25rem; margin-top: 2rem; }
.made, .state { color: #555; font-style: italic; }
.sentence { border-bottom: 1px dotted #888; }
.unsupported { background: #fff0f0; border-bottom: 1px solid #c00; }
.cite { text-decoration: none; }
.ev { font-size: .75em; vertical-align: super; margin-left: .1em; }
ol.evidence { font-size: .9em; color: #333; }
ol.evidence q { quotes: "\\201C" "\\201D"; }
.flag { color: #a00; }
"""


def report_html(report: Report) -> str:
    question = _text(one_line(report.question)) or "Research"
    body = [f"<h1>{question}</h1>", f'<p class="made">{_text(made(report))}</p>']
    if report.stopped:
        body.append(f'<p class="state">{_text(STOPPED_LINE)}</p>')
    if report.single:
        body += _section(report.sections[0], report)
    else:
        short = " ".join(_text(line) for line in report.short_answer())
        body += ['<section id="short-answer">', "<h2>Short answer</h2>", f"<p>{short}</p>"]
        body.append("</section>")
        for section in report.sections:
            body += [f'<section id="part-{section.number}">']
            body += [f"<h2>{section.number}. {_text(one_line(section.part))}</h2>"]
            body += [*_section(section, report), "</section>"]
    body += _references(report)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
            '<meta name="referrer" content="no-referrer">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{question}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            *body,
            "</body>",
            "</html>",
            "",
        ]
    )


def _section(section: Section, report: Report) -> list[str]:
    """A part's sentences, each with its citation and the footnote of its evidence, then
    the evidence itself; or the line that says why it has no answer."""
    if not section.claims:
        return [f'<p class="state">{_text(section_text(section, markdown=False))}</p>']
    sentences: list[str] = []
    notes: list[str] = []
    for claim in section.claims:
        index = len(notes) + 1
        anchor = f"ev-{section.number}-{index}"
        quotes = [quote_line(quote, claim.sentence) for quote in shown_quotes(claim)]
        lines = quotes + ([f"! {problem(claim)}"] if not claim.supported else [])
        kind = "sentence" if claim.supported else "sentence unsupported"
        tip = f' title="{_text(chr(10).join(lines))}"' if lines else ""
        shown = f'<span class="{kind}"{tip}>{_text(claim.sentence)}</span>'
        shown += _citation(claim)
        if lines:
            shown += f'<a class="ev" href="#{anchor}">{index}</a>'
            items = "".join(f"<li><q>{_text(q)}</q></li>" for q in quotes)
            flag = "" if claim.supported else f'<p class="flag">{_text(problem(claim))}</p>'
            notes.append(f'<li id="{anchor}">{_text(claim.sentence)}<ul>{items}</ul>{flag}</li>')
        sentences.append(shown)
    html = [f"<p>{' '.join(sentences)}</p>"]
    if notes:
        html += ['<ol class="evidence">', *notes, "</ol>"]
    return html


def _citation(claim: Claim) -> str:
    """`` [2]`` linking to reference 2; a citation the check corrected marked."""
    if not claim.shown:
        return ""
    links = ", ".join(f'<a class="cite" href="#ref-{n}">{n}</a>' for n in claim.shown)
    mark = MARK if claim.corrected else ""
    return f" [{links}]{mark}"


def _references(report: Report) -> list[str]:
    html = ['<section id="references">', "<h2>References</h2>"]
    if not report.references:
        return [*html, "<p>None: no part found a source.</p>", "</section>"]
    html.append("<ol>")
    cited = report.cited_numbers
    for source in report.references:
        note = "" if source.number in cited else ' <span class="state">(read, not cited)</span>'
        html.append(f'<li id="ref-{source.number}">{_link(source)}{note}</li>')
    return [*html, "</ol>", "</section>"]


def _link(source: Source) -> str:
    url = safe_url(source.url)
    title = _text(one_line(source.title)) or _text(url)
    if urlsplit(url).scheme.lower() not in LINKED:
        return f"{title} ({_text(url)})"
    where = _text(source.where)
    href = escape(url, quote=True)
    return f'<a href="{href}" rel="noopener noreferrer">{title}</a> <small>{where}</small>'


def _text(text: str) -> str:
    return escape(text_safe(text), quote=True)
