"""One numbering of references for a whole report, each part's citations renumbered to it.

Every part was answered from its own numbered sources, so its ``[1]`` is not another part's
``[1]``. The report numbers each page once: the pages the parts cite, in the order the
report cites them (part by part, as each part's sentences do), then those the check found
backing a sentence without a citation, then the ones read and not cited. A page two parts
read is one reference; its pruned text is the parts' pieces of it together, so that a
follow-up (the history keeps the report as a conversation) reads what each part read.
Each part's text and claims are then renumbered: the text through the citation grammar's own
stream (``reader/citation_syntax.py``), so that code and quoted source text keep their
brackets; the claims number by number, their quotes with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim
from htmlrag_chat.reader.citation_syntax import GROUP_RE, CitationStream, expand


@dataclass(frozen=True)
class Numbering:
    references: list[Source]  # numbered from 1 for the report
    maps: list[dict[int, int]]  # per answer: its source number -> the report's


def number_references(answers: Sequence[Answer | None]) -> Numbering:
    """The references of the ``answers`` (None: a part with no answer) and each one's map."""
    order: dict[str, list[Source]] = {}  # URL -> the sources that are this page
    for rank in (_cited, _found, _read):
        for answer in answers:
            if answer is None:
                continue
            for source in rank(answer):
                pieces = order.setdefault(source.url, [])
                if source not in pieces:
                    pieces.append(source)
    for answer in answers:  # every piece of a page, however it ranked
        for source in answer.sources if answer is not None else ():
            if source not in order[source.url]:
                order[source.url].append(source)
    numbers = {url: number for number, url in enumerate(order, 1)}
    references = [_merged(numbers[url], pieces) for url, pieces in order.items()]
    maps = [
        {source.number: numbers[source.url] for source in answer.sources}
        if answer is not None
        else {}
        for answer in answers
    ]
    return Numbering(references, maps)


def _cited(answer: Answer) -> list[Source]:
    """The sources the answer shows citations of, in the order its sentences cite them."""
    by_number = {source.number: source for source in answer.sources}
    order = dict.fromkeys(n for claim in answer.claims for n in claim.shown if n in by_number)
    return [by_number[number] for number in order]


def _found(answer: Answer) -> list[Source]:
    return [source for source in answer.sources if source.number in answer.found_numbers]


def _read(answer: Answer) -> list[Source]:
    return list(answer.sources)


def _merged(number: int, pieces: Sequence[Source]) -> Source:
    """One reference for the pieces of a page that several parts read."""
    first = pieces[0]
    html = "\n".join(dict.fromkeys(piece.html for piece in pieces))
    text = "\n".join(dict.fromkeys(piece.text for piece in pieces))
    return replace(first, number=number, html=html, text=text)


def renumber_text(text: str, numbers: Mapping[int, int]) -> str:
    """``text`` (an answer, as text or Markdown) citing the report's numbers: each citation
    group of its prose rewritten, a range listed, a doubled group single; a number with no
    reference (none: invented ones never got this far) left out."""

    def group(match: str) -> str:
        mapped = dict.fromkeys(numbers[n] for n in expand(match) if n in numbers)
        return f"[{', '.join(map(str, mapped))}]" if mapped else ""

    stream = CitationStream(lambda prose: GROUP_RE.sub(lambda m: group(m[0]), prose))
    return stream.feed(text) + stream.finish()


def renumber_claims(claims: Sequence[Claim], numbers: Mapping[int, int]) -> list[Claim]:
    """The claims citing, corrected to and quoting the report's numbers."""

    def mapped(cited: Sequence[int]) -> tuple[int, ...]:
        return tuple(dict.fromkeys(numbers[n] for n in cited if n in numbers))

    return [
        replace(
            claim,
            cited=mapped(claim.cited),
            corrected=mapped(claim.corrected),
            quotes=tuple(
                replace(quote, source=numbers[quote.source])
                for quote in claim.quotes
                if quote.source in numbers
            ),
        )
        for claim in claims
    ]
