"""A stored conversation as a Markdown document, for sharing or keeping outside the cache."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.safety import markdown_safe, one_line, safe_url


def conversation_markdown(title: str, messages: Sequence[Mapping[str, Any]]) -> str:
    """Each question as a heading, its latest answer, the quotes that back its sentences,
    then its numbered sources as links (the citations in the answer refer to them)."""
    lines = [f"# {one_line(title) or 'Conversation'}", ""]
    for message in messages:
        if message["role"] != "user":
            continue
        lines += [f"## {one_line(message['content'])}", ""]
        if not message["answers"]:
            lines += ["_No answer (stopped or failed)._", ""]
            continue
        answer = message["answers"][-1]
        lines += [answer["text"].strip(), ""]
        lines += _evidence(answer["citations"])
        if answer["sources"]:
            lines += ["**Sources**", ""]
            for source in answer["sources"]:
                url = safe_url(source["url"])  # as stored, or as an older version stored it
                label = one_line(source.get("title") or "") or url
                lines.append(f"{source['number']}. [{_link_text(label)}](<{url}>)")
            lines.append("")
        for flag in answer["flags"]:
            lines.append(f"> {flag}")
        if answer["flags"]:
            lines.append("")
    # Stored text is data (an older version, or another tool, may have stored anything):
    # the whole document passes the sanitiser, links to anything but web pages go.
    return markdown_safe("\n".join(lines).rstrip() + "\n")


def _evidence(records: Sequence[object]) -> list[str]:
    """Each backed sentence of an answer's stored claims with its quotes, as text (a
    quote's "[3]" or "**" is the page's, shown as it is). The check's code loads here, not
    with the command line."""
    from htmlrag_chat.evidence.records import stored_claims
    from htmlrag_chat.evidence.words import quote_line, shorten, shown_quotes

    claims = stored_claims(records)
    lines = []
    for claim in claims:
        quotes = [quote_line(quote, claim.sentence) for quote in shown_quotes(claim)]
        if quotes:
            lines.append(f"- {escape_markdown(shorten(claim.sentence))}")
            lines += [f"  - {escape_markdown(quote)}" for quote in quotes]
    return ["**Evidence**", "", *lines, ""] if lines else []


def export_path(folder: Path, conversation_id: int, title: str) -> Path:
    """``conversation-12-what-is-htmlrag.md`` in ``folder``: readable, unique per chat."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.casefold()).strip("-")[:48].strip("-")
    return folder / f"conversation-{conversation_id}{'-' + slug if slug else ''}.md"


def _link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")
