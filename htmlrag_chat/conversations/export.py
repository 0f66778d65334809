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
    then its numbered sources as links (the citations in the answer refer to them)."""
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
        if answer["sources"]:
            lines += ["**Sources**", ""]
            for source in answer["sources"]:
                url = safe_url(source["url"])  # as stored, or as an older version stored it
                label = _line(source.get("title") or "") or url
                lines.append(f"{source['number']}. [{_link_text(label)}](<{url}>)")
            lines.append("")
        for flag in answer["flags"]:
            lines.append(f"> {_line(flag)}")
        if answer["flags"]:
            lines.append("")
    # Stored text is data (an older version, or another tool, may have stored anything):
    # the whole document passes the sanitiser, links to anything but web pages go.
    return markdown_safe("\n".join(lines).rstrip() + "\n")


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
