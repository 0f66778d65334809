"""A stored conversation as a Markdown document, for sharing or keeping outside the cache.

What it holds came from pages and models: a title, a question or an answer is text, never
markup, so raw HTML in any of them (``<img onerror=...>``, ``<iframe src=javascript:...>``)
is escaped (``safety.no_raw_html``) and links to anything but web pages lose their target
(``safety.markdown_safe``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from htmlrag_chat.base.safety import markdown_safe, no_raw_html, one_line, safe_url
from htmlrag_chat.reader.literal import escape_markdown

if TYPE_CHECKING:
    from htmlrag_chat.evidence.claims import Claim


def conversation_markdown(title: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Each question as a heading, its latest answer, the quotes that back its sentences,
    then its numbered sources as links, those it cites first (the citations in the answer
    refer to their numbers)."""
    lines = [f"# {_line(title) or 'Conversation'}", ""]
    for message in messages:
        if message["role"] != "user":
            continue
        lines += [f"## {_line(message['content'])}", ""]
        if not message["answers"]:
            lines += ["_No answer (stopped or failed)._", ""]
            continue
        answer = message["answers"][-1]
        lines += [no_raw_html(answer["text"].strip()), ""]
        lines += _evidence(answer["citations"])
        lines += _sources(answer)
        for flag in answer["flags"]:
            lines.append(f"> {_line(flag)}")
        if answer["flags"]:
            lines.append("")
    # Stored text is data (an older version, or another tool, may have stored anything):
    # the whole document passes the sanitiser, links to anything but web pages go.
    return markdown_safe("\n".join(lines).rstrip() + "\n")


def cited_numbers(answer: Mapping[str, Any]) -> set[int]:
    """The sources a stored answer cites (its sentences' ``[n]``; the others were read)."""
    from htmlrag_chat.evidence.records import stored_claims

    return {number for claim in stored_claims(answer["citations"]) for number in claim.cited}


def sources_cited_first(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A stored answer's sources, those it cites first, each marked ``cited``; the numbers
    stay the ones its ``[n]`` point to."""
    cited = cited_numbers(answer)
    marked = [dict(source) | {"cited": source["number"] in cited} for source in answer["sources"]]
    return sorted(marked, key=lambda source: not source["cited"])


def _sources(answer: Mapping[str, Any]) -> list[str]:
    """The sources as links, under a line that says which the answer cites (first) and
    which it only read; a bulleted list, since a numbered one out of order is renumbered."""
    sources = sources_cited_first(answer)
    if not sources:
        return []
    groups = [
        ("**Sources cited**", [s for s in sources if s["cited"]]),
        ("**Read, not cited**", [s for s in sources if not s["cited"]]),
    ]
    if not groups[0][1]:
        groups = [("**Sources** (read; the answer cites none)", sources)]
    lines = []
    for heading, group in groups:
        if not group:
            continue
        lines += [heading, ""]
        for source in group:
            url = safe_url(source["url"])  # as stored, or as an older version stored it
            label = _line(source.get("title") or "") or url
            # "[3] [title](url)": a space apart, no reference link; the number reads as typed
            lines.append(f"- [{source['number']}] [{_link_text(label)}](<{url}>)")
        lines.append("")
    return lines


def _evidence(records: Sequence[object]) -> list[str]:
    """Each sentence of an answer's stored claims with its quotes. The check's code loads
    here, not with the command line."""
    from htmlrag_chat.evidence.records import stored_claims

    return evidence_markdown(stored_claims(records))


def evidence_markdown(claims: Sequence[Claim]) -> list[str]:
    """Markdown lines: each sentence with its quotes, as text (a quote's "[3]" or "**" is
    the page's, shown as it is), then the citations the check corrected (a research's
    report shows each part's the same way)."""
    from htmlrag_chat.evidence.correction import MARK
    from htmlrag_chat.evidence.words import (
        correction_lines,
        quote_line,
        sentence_line,
        shown_quotes,
    )

    lines = []
    for claim in claims:
        quotes = [quote_line(quote, claim.sentence) for quote in shown_quotes(claim)]
        if quotes:
            lines.append(f"- {escape_markdown(sentence_line(claim))}")
            lines += [f"  - {escape_markdown(quote)}" for quote in quotes]
    shown = ["**Evidence**", "", *lines, ""] if lines else []
    corrected = [f"> {MARK} {escape_markdown(line)}" for line in correction_lines(claims)]
    return [*shown, *corrected, ""] if corrected else shown


def export_path(folder: Path, conversation_id: int, title: str) -> Path:
    """``conversation-12-what-is-htmlrag.md`` in ``folder``: readable, unique per chat."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:48].strip("-")
    return folder / f"conversation-{conversation_id}{'-' + slug if slug else ''}.md"


def _line(text: str) -> str:
    """Text for one line of the document (a heading, a link, a flag), its HTML escaped."""
    return no_raw_html(one_line(text))


def _link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")
