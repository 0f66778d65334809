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
  backs the sentence, terms only). A sentence citing [1, 3] where only [1] holds fails.
- ``other_language``: the answer reads as another language than the question's (the
  dataset's ``lang``, else the question's own words) by its function words
  (``lexical.language.written_in``); an answer too short to tell is not counted.
- ``declined``: the answer is not correct and says that the sources do not hold the answer
  (phrases in the languages of the dev sets, below). ``cannot_answer`` in the report is the
  share of questions whose answer was not in the context that the reader declined, rather
  than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from htmlrag_chat.base.sources import Source
from htmlrag_chat.eval.metrics import answer_present, normalize
from htmlrag_chat.evidence.claims import check_answer
from htmlrag_chat.lexical.analysis import tokens
from htmlrag_chat.lexical.language import script_language, written_in

# "The sources do not say": how readers decline, in the languages of the dev sets. Matched
# on the casefolded answer; a declined answer that also names the gold answer is correct.
_DECLINES = re.compile(
    "|".join(
        (
            # English
            r"\b(?:do|does|did)(?: not|n't) (?:\w+ )?(?:contain|mention|provide|include|say|"
            r"specify|state|give|list|have|offer|address|answer|show|indicate)",
            r"\bno (?:specific |relevant |direct )?(?:information|mention|details|data|answer)",
            r"\bnot (?:\w+ )?(?:mentioned|provided|specified|stated|available|included|found|"
            r"given|listed|contained|present|addressed|answered)",
            r"\b(?:cannot|can't|can not|unable to|could not|couldn't) (?:\w+ )?(?:answer|"
            r"determine|find|tell|provide|be determined|be answered|say|identify)",
            # German
            r"\b(?:enthalten|nennen|erwähnen|geben|liefern|sagen|beantworten)\b[^.]{0,40}"
            r"\b(?:keine|nicht)\b",
            r"\bkeine (?:\w+ )?(?:informationen|angaben|antwort|hinweise)",
            r"\bnicht (?:\w+ )?(?:erwähnt|angegeben|enthalten|genannt|beantwortet|beantworten|"
            r"bekannt|ersichtlich)",
            # Spanish, Portuguese, Italian
            r"\bno (?:se )?(?:contienen|contiene|mencionan?|proporcionan?|incluyen|indican?|"
            r"especifican?|dicen|hay información|puedo|es posible)",
            r"\b(?:ninguna|sin) información",
            r"\bnão (?:\w+ )?(?:contêm|contém|mencionam|menciona|fornecem|informam|especificam|"
            r"indicam|é possível|há informaç|posso)",
            r"\bnenhuma informação",
            r"\bnon (?:\w+ )?(?:contengono|contiene|menzionano|menziona|forniscono|specificano|"
            r"indicano|posso|è possibile|ci sono informazioni)",
            r"\bnessuna informazione",
            # French
            r"\bne (?:\w+ )?(?:contiennent|contient|mentionnent|mentionne|fournissent|précisent|"
            r"donnent|disent|permettent|peux|peut|trouve)\b",
            r"\baucune (?:\w+ )?information",
            r"\bpas (?:été )?(?:mentionné|précisé|indiqué|d'information)",
            # Polish, Finnish, Hungarian
            r"\bnie (?:\w+ )?(?:zawierają|zawiera|podają|podaje|wspominają|wspomina|ma "
            r"informacji|mogę|można|określają)",
            r"\bbrak (?:\w+ )?informacji",
            r"\b(?:ei|eivät) (?:\w+ )?(?:mainita|mainitse|kerrota|kerro|sisällä|löydy|ole tietoa)",
            r"\bnem (?:\w+ )?(?:tartalmaz|említ|szerepel|található|adnak|ad meg)",
            r"\bnincs (?:\w+ )?(?:információ|adat)",
            # Japanese, Arabic
            r"記載されていません|含まれていません|情報はありません|見つかりません|"
            r"言及されていません|記載がありません|わかりません",
            r"لا تحتوي|لا تذكر|لا يوجد|لم يتم ذكر|لا تتضمن",
        )
    )
)


def grade(
    record: dict[str, Any], question: str, answers: Sequence[str], language: str = ""
) -> dict[str, Any]:
    """The grades of one stored answer (``reading.read``'s record) to ``question`` (in
    ``language`` when the dataset says) for these gold answers, with each cited sentence's
    verdict per cited source."""
    texts: list[str] = record["texts"]
    sources = {number: text for number, text in enumerate(texts, 1)}
    correct = answer_present(answers, record["answer"])
    checked = checked_citations(question, record)
    citations = [_judge(citation, sources, answers) for citation in checked]
    cited = bool(citations)
    return {
        "correct": correct,
        "in_context": answer_present(answers, "\n".join(texts)),
        "cited": cited,
        "citations_hold": cited and all(all(c["holds"]) for c in citations),
        "other_language": other_language(record["answer"], question, language),
        "declined": not correct and declines(record["answer"]),
        "citations": citations,
    }


def checked_citations(question: str, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's cited sentences, each with the sources it cites and those of them whose
    passages back it (``check_answer`` on the record's sources, terms only, as ``ask``
    checks an answer: grading needs no model)."""
    sources = [
        Source(shown["number"], shown["url"], shown["title"], html, text)
        for shown, html, text in zip(
            record["sources"], record["html"], record["texts"], strict=True
        )
    ]
    return [
        {
            "sentence": claim.sentence,
            "sources": list(claim.cited),
            "support": claim.support,
            "backed_by": [quote.source for quote in claim.backing],
        }
        for claim in check_answer(question, record["markdown"], sources)
        if claim.cited
    ]


def other_language(answer: str, question: str, language: str = "") -> bool:
    """Whether the answer is plainly in another language than the question (``language``,
    else the one its words show; neither known: not counted)."""
    asked = language or script_language(question, tokens(question)[0])
    return bool(asked) and written_in(tokens(answer)[0], asked) is False


def declines(answer: str) -> bool:
    """Whether an answer says that its sources do not hold the answer."""
    return _DECLINES.search(answer.casefold()) is not None


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
