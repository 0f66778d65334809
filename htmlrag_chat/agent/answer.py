"""What one question produces: the answer, its claims with their evidence, and what its
research did (sources, queries run and skipped, pages left out, timings, notices:
``agent/research.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.safety import json_safe, markdown_safe, one_line, safe_url, terminal_safe
from htmlrag_chat.evidence.claims import Claim, cited_numbers, found_numbers
from htmlrag_chat.evidence.correction import unmarked
from htmlrag_chat.evidence.records import claim_record
from htmlrag_chat.evidence.words import correction_lines
from htmlrag_chat.html.blocks import Document
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.rendering import RENDERINGS
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.reader import Source, Turn


class AnswerRecord(TypedDict):
    """The keyword arguments of ``Store.add_answer`` (typed, so that ``**`` checks them)."""

    reader: str
    text: str
    sources: list[dict]
    citations: list[dict]
    flags: list[str]


@dataclass
class Answer:
    question: str
    text: str
    reader: str  # the backend that answered (reader/registry.py): never pass one off as another
    model: str
    claims: list[Claim]  # each sentence with the passages that back it (``evidence/``)
    removed_citations: int  # citation numbers with no such source, taken out of the text
    flags: list[str]  # one line per sentence no source backs
    # What its research did: the sources it was read from, the queries searched for (in
    # order, the skipped among them), the rounds (0: answered from the conversation's
    # sources), the pages left out and why, each stage's time, the notices said.
    research: Research = field(default_factory=Research)
    first_token_ms: float | None = None  # from the question to the first answer text
    total_ms: float = 0.0
    # The answer as Markdown, for the chat app, the store and follow-ups: ``text`` with the
    # text quoted from sources escaped, so that it shows as it is and cites nothing ("":
    # nothing was quoted, the text is the Markdown).
    markdown: str = ""
    # The answer as the reader wrote it, where the check corrected its citations ("": it
    # shows as written). ``text`` and ``markdown`` show the corrections, marked.
    written: str = ""

    def __post_init__(self) -> None:
        self.markdown = self.markdown or self.text

    @property
    def sources(self) -> list[Source]:
        """The numbered sources it was read from (a follow-up's may be the turn's before)."""
        return self.research.sources

    @property
    def cited(self) -> bool:
        """Whether every sentence that says something is backed by a source, cited by the
        model or found by the checker; an answer without one is not."""
        checked = [claim for claim in self.claims if claim.checked]
        return bool(checked) and all(claim.supported for claim in checked)

    @property
    def cited_numbers(self) -> set[int]:
        """The sources the answer cites, as it shows them (corrected citations included; the
        others were read and not cited)."""
        return cited_numbers(self.claims)

    @property
    def corrections(self) -> list[str]:
        """One line per citation the check corrected: what the reader cited, and why not."""
        return correction_lines(self.claims)

    @property
    def found_numbers(self) -> set[int]:
        """The sources it does not cite that the check found backing one of its sentences
        (one that cites nothing, or the wrong source): no ``[n]`` of the text points at them."""
        return found_numbers(self.claims)

    def to_json(self) -> dict[str, object]:
        """The ``--json`` record: everything a script needs, the reader's input included.

        Page text, titles and URLs are untrusted: every string passes ``json_safe`` (no
        controls, bidi overrides or control tokens) and URLs ``safe_url``, for the scripts
        and the models that read this record, and for the cache that keeps it."""
        urls = {source.number: safe_url(source.url) for source in self.sources}
        research = self.research
        return json_safe(
            {
                "question": self.question,
                "answer": self.text,
                "answer_as_written": self.written or self.text,
                "reader": self.reader,
                "model": self.model,
                "sentences": [claim_record(claim, urls) for claim in self.claims],
                "cited": self.cited,
                "removed_citations": self.removed_citations,
                "flags": self.flags,
                "corrections": self.corrections,
                "queries": research.queries,
                "skipped_queries": [
                    {"query": d.what, "reason": d.reason} for d in research.skipped
                ],
                "rounds": research.rounds,
                "timings_ms": {stage: round(ms, 2) for stage, ms in research.timings.items()},
                "first_token_ms": _round(self.first_token_ms),
                "total_ms": round(self.total_ms, 2),
                # The cited first, each marked and numbered: a person reads what the answer
                # rests on first, and a script looks a source up by its [n].
                "sources": [
                    {
                        "number": s.number,
                        "cited": s.number in self.cited_numbers,
                        "url": safe_url(s.url),
                        "local": s.local,
                        "title": one_line(s.title),
                        "date": s.date,
                        "content": s.html,
                        "rendering": s.rendering,
                    }
                    for s in sorted(self.sources, key=lambda s: s.number not in self.cited_numbers)
                ],
                "left_out": [
                    {"url": safe_url(d.what), "reason": d.reason} for d in research.left_out
                ],
                "notes": research.notes,
            }
        )

    def store_record(self) -> AnswerRecord:
        """Keyword arguments for ``Store.add_answer``. The sentences, like the text, keep
        links to web pages only (``markdown_safe``): the history shows them as Markdown."""
        record: dict[str, Any] = self.to_json()
        sentences = [
            sentence
            | {
                "sentence": markdown_safe(sentence["sentence"]),
                "citations": [
                    quote | {"quote": markdown_safe(quote["quote"])}
                    for quote in sentence["citations"]
                ],
            }
            for sentence in record["sentences"]
        ]
        return {
            "reader": f"{self.reader}:{self.model}",
            "text": markdown_safe(self.markdown),
            "sources": record["sources"],
            "citations": sentences,  # the column kept its name (evidence/records.py)
            "flags": [markdown_safe(flag) for flag in self.flags],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def turns_from_messages(messages: Sequence[Mapping[str, Any]]) -> list[Turn]:
    """A stored conversation (``Store.messages``) as the agent's history: each question with
    its latest answer. A question without one (cancelled, or failed) is left out, so a
    follow-up never builds on an answer nobody saw."""
    turns = []
    for message in messages:
        if message["role"] != "user" or not message["answers"]:
            continue
        answer = message["answers"][-1]
        sources = tuple(map(stored_source, answer["sources"]))
        turns.append(Turn(message["content"], unmarked(answer["text"]), sources))
    return turns


def stored_source(record: Mapping[str, Any]) -> Source:
    """A source as ``Answer.to_json`` stored it; its text is derived again from the HTML."""
    html = record.get("content") or ""
    text = visible_text(parse(html), lines=True) if html else ""
    title, date = record.get("title") or "", record.get("date") or ""
    rendering = record.get("rendering")  # absent before renderings: HTML
    rendering = rendering if rendering in RENDERINGS else "html"
    return Source(record["number"], record["url"], title, html, text, date, rendering)


def numbered_sources(
    document: Document, titles: dict[str, str], rendering: str = "html"
) -> list[Source]:
    """Pages with text left after pruning, numbered from 1 in document order, for a reader
    that gets them in ``rendering``."""
    sources: list[Source] = []
    for index, page in enumerate(document.pages):
        text = visible_text(document.root[index], lines=True)
        if text:
            sources.append(
                Source(
                    number=len(sources) + 1,
                    url=page.source,
                    title=terminal_safe(page.title or titles.get(page.source, "")),
                    html=document.page_html(index),
                    text=text,
                    date=page.date,
                    rendering=rendering,
                )
            )
    return sources
