"""The report of a research: a short answer first, a section per part, one list of references.

Each part is an ``Answer`` of the agent (its sentences checked, judged and corrected as
``ask``'s are); here they become sections citing one numbering of references for the whole
report (``references.py``). The short answer is no new text: it is the first backed
sentence of each part's answer, with its citation, so that every sentence of the report is
one the check read against its sources, and a part that found nothing says so in one line
instead of being filled in. A report of one part is that part's answer.

The report becomes an ``Answer`` too (``as_answer``), so that the history keeps it as a
conversation (``history show``/``export``, a follow-up with ``ask -c``), the chat app shows
it as it shows answers, and nothing below the faces has to learn a new record.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.events import BY_READER, GIVEN
from htmlrag_chat.base.safety import json_safe, one_line, safe_url
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, cited_numbers, found_numbers
from htmlrag_chat.evidence.correction import MARK
from htmlrag_chat.evidence.records import claim_record
from htmlrag_chat.evidence.words import correction_lines, flag_lines
from htmlrag_chat.reader.citations import written_sentence
from htmlrag_chat.reader.literal import escape_markdown
from htmlrag_chat.research.references import number_references, renumber_claims, renumber_text

ANSWERED, NOTHING, STOPPED, FAILED = "answered", "nothing found", "stopped", "failed"
STATES = (ANSWERED, NOTHING, STOPPED, FAILED)
_END = re.compile(r"[.!?\u3002\uff01\uff1f]+\Z")


@dataclass
class PartResult:
    """What one part came to, as the run leaves it (``stopped`` until it is done)."""

    number: int
    part: str
    state: str = STOPPED
    answer: Answer | None = None
    cached: bool = False  # its answer came from an earlier run (``kept.py``)
    reason: str = ""  # why it found nothing, or failed


@dataclass
class Section:
    """A part as the report shows it: its answer citing the report's references."""

    number: int
    part: str
    state: str
    text: str = ""  # "" with no answer
    markdown: str = ""
    written: str = ""  # as the reader wrote it, where the check corrected it
    claims: list[Claim] = field(default_factory=list)
    sources: tuple[int, ...] = ()  # the references it read
    reason: str = ""
    cached: bool = False
    answer: Answer | None = None  # the part's own record: queries, timings, notes

    @property
    def checked(self) -> list[Claim]:
        return [claim for claim in self.claims if claim.checked]

    @property
    def backed(self) -> int:
        return sum(claim.supported for claim in self.checked)

    @property
    def lead(self) -> Claim | None:
        """The sentence that answers the part in the short answer: its first backed one."""
        return next((claim for claim in self.checked if claim.supported), None)

    def summary(self) -> str:
        """What it came to, in a few words (the progress line when it ends)."""
        if self.state == ANSWERED:
            checked = len(self.checked)
            return (
                f"{checked} sentence{'s' if checked != 1 else ''}, {self.backed} backed, "
                f"{len(self.sources)} source{'s' if len(self.sources) != 1 else ''}"
            )
        return self.reason


@dataclass
class Report:
    question: str
    reader: str  # the backend that answered (reader/registry.py)
    model: str
    sections: list[Section]
    references: list[Source]
    how: str = BY_READER  # how the parts were made (base/events.py)
    stopped: bool = False  # stopped before every part was done
    total_ms: float = 0.0

    @classmethod
    def of(
        cls,
        question: str,
        reader: str,
        model: str,
        results: Sequence[PartResult],
        how: str = BY_READER,
        stopped: bool = False,
        total_ms: float = 0.0,
    ) -> Report:
        numbering = number_references([result.answer for result in results])
        sections = []
        for result, numbers in zip(results, numbering.maps, strict=True):
            answer = result.answer
            section = Section(result.number, result.part, result.state, reason=result.reason,
                              cached=result.cached, answer=answer)  # fmt: skip
            if answer is not None and result.state == ANSWERED:
                section.text = renumber_text(answer.text, numbers)
                section.markdown = renumber_text(answer.markdown, numbers)
                section.written = renumber_text(answer.written, numbers)
                section.claims = renumber_claims(answer.claims, numbers)
                section.sources = tuple(sorted(numbers.values()))
            sections.append(section)
        return cls(question, reader, model, sections, numbering.references, how, stopped,
                   total_ms)  # fmt: skip

    @property
    def given(self) -> bool:
        """Whether the parts were the user's."""
        return self.how == GIVEN

    @property
    def claims(self) -> list[Claim]:
        return [claim for section in self.sections for claim in section.claims]

    @property
    def cited_numbers(self) -> set[int]:
        return cited_numbers(self.claims)

    @property
    def found_numbers(self) -> set[int]:
        """References no sentence cites that the check found backing one."""
        return found_numbers(self.claims)

    @property
    def single(self) -> bool:
        """One part: the report is its answer, with no short answer above it."""
        return len(self.sections) == 1

    def short_answer(self, markdown: bool = False) -> list[str]:
        """A line per part: its lead sentence with its citation, or what became of it."""
        return [_short_line(section, markdown) for section in self.sections]

    def body(self, heading: str = "##", markdown: bool = True) -> str:
        """The report under its title: the short answer, then each part under ``heading``
        (``###`` inside a conversation, whose questions are ``##``). The citations are the
        report's; each sentence's evidence is the exports' and the faces' to show."""
        if self.single:
            return section_text(self.sections[0], markdown)
        lines = [" ".join(self.short_answer(markdown)), ""]
        for section in self.sections:
            title = escape_markdown(one_line(section.part)) if markdown else one_line(section.part)
            lines += [
                f"{heading} {section.number}. {title}",
                "",
                section_text(section, markdown),
                "",
            ]
        return "\n".join(lines).strip()

    def as_answer(self) -> Answer:
        """The report as one answer: what the history keeps and the chat app shows."""
        answers = [section.answer for section in self.sections if section.answer is not None]
        timings: dict[str, float] = {}
        for answer in answers:
            for name, ms in answer.research.timings.items():
                timings[name] = timings.get(name, 0.0) + ms
        research = Research(
            sources=self.references,
            queries=[query for answer in answers for query in answer.research.queries],
            rounds=max((answer.research.rounds for answer in answers), default=0),
            timings=timings,
            notes=list(dict.fromkeys(note for a in answers for note in a.research.notes)),
        )
        return Answer(
            question=self.question,
            text=self.body("###", markdown=False),
            reader=self.reader,
            model=self.model,
            claims=self.claims,
            removed_citations=sum(answer.removed_citations for answer in answers),
            flags=flag_lines(self.claims),
            research=research,
            total_ms=self.total_ms,
            markdown=self.body("###"),
        )

    def to_json(self) -> dict[str, object]:
        """The ``--json`` record: the short answer, each part with its sentences, citations
        and quotes, the references. Every string passes ``json_safe``, URLs ``safe_url``."""
        urls = {source.number: safe_url(source.url) for source in self.references}
        parts_of: dict[int, list[int]] = {}
        for section in self.sections:
            for number in section.sources:
                parts_of.setdefault(number, []).append(section.number)
        claims = [claim for claim in self.claims if claim.checked]
        return json_safe(
            {
                "question": self.question,
                "reader": self.reader,
                "model": self.model,
                "parts_given": self.given,
                "stopped": self.stopped,
                "short_answer": " ".join(self.short_answer()),
                "report": self.body(markdown=False),
                "parts": [_section_json(section, urls) for section in self.sections],
                "references": [
                    {
                        "number": source.number,
                        "cited": source.number in self.cited_numbers,
                        "parts": parts_of.get(source.number, []),
                        "url": safe_url(source.url),
                        "local": source.local,
                        "title": one_line(source.title),
                        "date": source.date,
                        "content": source.html,
                        "rendering": source.rendering,
                    }
                    for source in self.references
                ],
                "sentences": len(claims),
                "backed": sum(claim.supported for claim in claims),
                "flags": flag_lines(self.claims),
                "corrections": correction_lines(self.claims),
                "total_ms": round(self.total_ms, 2),
            }
        )


def section_text(section: Section, markdown: bool = True) -> str:
    """A part's answer, or one line on why it has none."""
    if section.state == ANSWERED:
        return section.markdown if markdown else section.text
    line = _state_line(section)
    return f"_{escape_markdown(line)}_" if markdown else line


def _state_line(section: Section) -> str:
    if section.state == NOTHING:
        return f"Nothing found: {section.reason}" if section.reason else "Nothing found."
    if section.state == FAILED:
        return f"Not answered: {section.reason}"
    return "Stopped before it was answered."


def _short_line(section: Section, markdown: bool) -> str:
    lead = section.lead
    if section.state == ANSWERED and lead is not None:
        answer = section.markdown if markdown else section.text
        written = written_sentence(answer, section.sources, lead.sentence)
        if written is not None:  # as the part's answer has it, citations and all
            return " ".join(written.split())
        sentence = escape_markdown(lead.sentence) if markdown else lead.sentence
        return cite(sentence, lead.shown, corrected=bool(lead.corrected))
    what = f"Part {section.number}"
    if section.state == ANSWERED and not section.checked:
        return f"{what}: the sources it found do not answer it."
    if section.state == ANSWERED:
        return f"{what}: no sentence of its answer is backed by its sources."
    line = _state_line(section).rstrip(".")
    return f"{what}: {line[:1].lower()}{line[1:]}."


def cite(sentence: str, numbers: Iterable[int], corrected: bool = False) -> str:
    """``sentence`` with its citation before its end mark: ``It opened in 1889 [2].``"""
    numbers = list(numbers)
    if not numbers:
        return sentence
    group = f"[{', '.join(map(str, numbers))}]{MARK if corrected else ''}"
    end = _END.search(sentence)
    if end is None:
        return f"{sentence} {group}"
    return f"{sentence[: end.start()].rstrip()} {group}{end[0]}"


def _section_json(section: Section, urls: dict[int, str]) -> dict[str, object]:
    answer = section.answer
    checked = section.checked
    return {
        "number": section.number,
        "part": section.part,
        "state": section.state,
        "cached": section.cached,
        "reason": section.reason,
        "answer": section.text,
        "answer_as_written": section.written or section.text,
        "sentences": [claim_record(claim, urls) for claim in section.claims],
        "cited": bool(checked) and all(claim.supported for claim in checked),
        "flags": flag_lines(section.claims),
        "corrections": correction_lines(section.claims),
        "sources": list(section.sources),
        "queries": answer.research.queries if answer is not None else [],
        "skipped_queries": [
            {"query": d.what, "reason": d.reason}
            for d in (answer.research.skipped if answer else [])
        ],
        "total_ms": round(answer.total_ms, 2) if answer is not None else 0.0,
        "notes": answer.research.notes if answer is not None else [],
    }
