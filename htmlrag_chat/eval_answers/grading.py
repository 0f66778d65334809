"""An answer scored against its question's gold answers and the sources it was given.

Grades are worked out from the stored answer on every run, never stored with it: the
reader's work is what the cache keeps, so a change of a measure here costs no model call.

- ``correct``: a gold answer, normalized as ``eval qa`` normalizes (SQuAD: case,
  punctuation, articles, spaces), is in the normalized answer.
- ``in_context``: a gold answer is in the visible text of the sources the reader got.
- ``cited``: the answer cites one of its sources at all (after the citation filter took
  out numbers no source has, as ``ask`` shows it).
- ``citations_hold``: it is cited, and every citation points to a source that holds what
  its sentence claims. For a sentence that states a gold answer, each source it cites must
  contain that gold answer; for any other cited sentence, each source it cites must back it
  as ``ask``'s own check does (``evidence.claims.check_answer``: a passage of that source
  backs the sentence, by its terms, or by the judge's verdict where the words could not
  decide and a verdict was kept with the reading). A sentence citing [1, 3] where only [1]
  holds fails.
- ``gold_cited``: a right answer whose first sentence stating a gold answer cites a source
  whose text contains one: a grade that uses no verdict of the check, only the gold
  answers. ``gold_cited_corrected``: the same for the citations the answer shows after the
  check's corrections (``evidence.correction``).
- ``check_backed``: the check's own grade, as ``ask`` shows it: every sentence that says
  something is backed by a source, after the judge and the corrections.
- ``other_language``: the answer reads as another language than the question's (the
  dataset's ``lang``, else the question's own words) by its function words
  (``lexical.language.written_in``); an answer too short to tell is not counted.
- ``declined``: the answer is not correct and says that the sources do not hold the answer
  (phrases in the languages of the dev sets, below). ``cannot_answer`` in the report is the
  share of questions whose answer was not in the context that the reader declined, rather
  than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from htmlrag_chat.base.sources import Source
from htmlrag_chat.eval.metrics import answer_present, normalize
from htmlrag_chat.evidence.claims import Claim, check_answer
from htmlrag_chat.evidence.correction import correct
from htmlrag_chat.evidence.declining import declines
from htmlrag_chat.evidence.judging import BAND, apply, pairs_of, uncertain
from htmlrag_chat.lexical.analysis import tokens
from htmlrag_chat.lexical.language import script_language, written_in


def grade(
    record: dict[str, Any], question: str, answers: Sequence[str], language: str = ""
) -> dict[str, Any]:
    """The grades of one stored answer (``reading.read``'s record) to ``question`` (in
    ``language`` when the dataset says) for these gold answers, with each cited sentence's
    verdict per cited source."""
    texts: list[str] = record["texts"]
    sources = {number: text for number, text in enumerate(texts, 1)}
    correct = answer_present(answers, record["answer"])
    claims = settled_claims(question, record)
    citations = [_judge(citation, sources, answers) for citation in cited_sentences(claims)]
    cited = bool(citations)
    checked = [claim for claim in claims if claim.checked]
    return {
        "correct": correct,
        "in_context": answer_present(answers, "\n".join(texts)),
        "cited": cited,
        "citations_hold": cited and all(all(c["holds"]) for c in citations),
        "gold_cited": correct and gold_cited(claims, sources, answers, corrected=False),
        "gold_cited_corrected": correct and gold_cited(claims, sources, answers, corrected=True),
        "check_backed": bool(checked) and all(claim.supported for claim in checked),
        "other_language": other_language(record["answer"], question, language),
        "declined": not correct and declines(record["answer"]),
        "citations": citations,
    }


def settled_claims(question: str, record: dict[str, Any]) -> list[Claim]:
    """The answer's claims as ``ask`` shows them: the evidence check on the record's sources,
    the judge's verdicts kept with the record applied where the check asks for them (a pair
    with no verdict kept is left to the words), then the corrections. Grading calls no
    model: the verdicts were asked when the answer was read (``runner``)."""
    sources = record_sources(record)
    verdicts = record.get("verdicts")
    band = BAND if verdicts is not None else None
    claims = check_answer(question, record["markdown"], sources, band=band)
    if verdicts:
        kept = {(v["sentence"], v["passage"], v["source"]): v["p"] for v in verdicts}
        asked = uncertain(claims)
        found = [kept.get((p.sentence, p.passage, p.source)) for p in pairs_of(claims, asked)]
        claims = apply(claims, asked, found)
    return correct(claims)


def record_sources(record: dict[str, Any]) -> list[Source]:
    """The numbered sources a reading kept, as the check reads them."""
    return [
        Source(shown["number"], shown["url"], shown["title"], html, text)
        for shown, html, text in zip(
            record["sources"], record["html"], record["texts"], strict=True
        )
    ]


def cited_sentences(claims: Sequence[Claim]) -> list[dict[str, Any]]:
    """The answer's sentences that cite a source, as the model cited them, each with the
    sources of it whose passages back it (as the check, and the judge, found)."""
    return [
        {
            "sentence": claim.sentence,
            "sources": list(claim.cited),
            "support": claim.support,
            "backed_by": [quote.source for quote in claim.backing if not quote.added],
        }
        for claim in claims
        if claim.cited
    ]


def gold_cited(
    claims: Sequence[Claim], texts: dict[int, str], answers: Sequence[str], corrected: bool
) -> bool:
    """Whether the first sentence that states a gold answer cites a source whose text holds
    one (as the model cited it, or as the answer shows it ``corrected``). A grade that uses
    no verdict of the check, only the gold answers."""
    for claim in claims:
        said = normalize(claim.sentence)
        golds = [gold for gold in answers if (norm := normalize(gold)) and norm in said]
        if golds:
            cited = claim.shown if corrected else claim.cited
            return any(answer_present(golds, texts.get(number, "")) for number in cited)
    return False


def other_language(answer: str, question: str, language: str = "") -> bool:
    """Whether the answer is plainly in another language than the question (``language``,
    else the one its words show; neither known: not counted)."""
    asked = language or script_language(question, tokens(question)[0])
    return bool(asked) and written_in(tokens(answer)[0], asked) is False


def _judge(citation: dict[str, Any], sources: dict[int, str], answers: Sequence[str]) -> dict:
    """A cited sentence with whether each source it cites holds its claim."""
    sentence = citation["sentence"]
    said = normalize(sentence)
    golds = [gold for gold in answers if (norm := normalize(gold)) and norm in said]
    holds = []
    for number in citation["sources"]:
        text = sources.get(number, "")
        if golds:
            holds.append(answer_present(golds, text))
        else:
            holds.append(number in citation["backed_by"])
    return {**citation, "holds": holds}
