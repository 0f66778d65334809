"""How an answer is scored: right, cited, citations that hold, declined."""

from __future__ import annotations

import pytest

from htmlrag_chat.eval_answers.grading import declines, grade, settled_claims
from htmlrag_chat.evidence.judging import pairs_of, uncertain

TEXTS = [
    "Docker Engine is released under the Apache License, Version 2.0.",
    "Moby is the upstream project of Docker. It is developed in the open on GitHub.",
]
GOLD = ["Apache License"]
QUESTION = "What is Docker's license?"


def record(answer: str, texts: list[str] = TEXTS) -> dict:
    """What ``reading.read`` keeps of an answer for grading: the answer, its Markdown, and
    each source's visible text and pruned HTML."""
    numbered = list(enumerate(texts, 1))
    return {
        "answer": answer,
        "markdown": answer,
        "sources": [{"number": n, "url": f"p{n}.html", "title": ""} for n, _ in numbered],
        "texts": texts,
        "html": [f"<p>{text}</p>" for text in texts],
    }


def graded(answer: str, texts: list[str] = TEXTS) -> dict:
    return grade(record(answer, texts), QUESTION, GOLD)


def test_a_right_answer_citing_the_source_that_holds_it() -> None:
    grades = graded("It is released under the Apache License [1].")
    assert grades["correct"] and grades["in_context"] and grades["cited"]
    assert grades["citations_hold"] and not grades["declined"]
    assert grades["citations"][0]["holds"] == [True]


def test_the_gold_answer_must_be_in_every_source_its_sentence_cites() -> None:
    grades = graded("It is released under the Apache License [1, 2].")
    assert grades["correct"] and grades["cited"] and not grades["citations_hold"]
    assert grades["citations"][0]["holds"] == [True, False]
    wrong = graded("It is released under the Apache License [2].")
    assert wrong["correct"] and not wrong["citations_hold"]


def test_other_sentences_hold_when_their_source_backs_them_as_ask_checks() -> None:
    answer = "Moby is developed in the open on GitHub [2]. The license is Apache License [1]."
    assert graded(answer)["citations_hold"]
    invented = "Moby was written by volunteers in Antarctica during winter [2]. Apache License [1]."
    grades = graded(invented)
    assert grades["cited"] and not grades["citations_hold"]


def test_an_uncited_right_answer_is_right_but_not_cited() -> None:
    grades = graded("Apache License, Version 2.0.")
    assert grades["correct"] and not grades["cited"] and not grades["citations_hold"]


def test_an_answer_not_in_the_context_is_declined_or_guessed() -> None:
    texts = ["Moby is the upstream project of Docker."]
    declined = graded("The sources do not mention the license.", texts)
    assert not declined["in_context"] and not declined["correct"] and declined["declined"]
    guessed = graded("It is MIT licensed [1].", texts)
    assert not guessed["declined"] and not guessed["correct"]


@pytest.mark.parametrize(
    "answer",
    [
        "The sources do not contain this information.",
        "I cannot determine the goalkeeper from the sources.",
        "Die Quellen enthalten dazu keine Angaben.",
        "Las fuentes no mencionan el nombre.",
        "Les sources ne précisent pas la date.",
        "Źródła nie zawierają tej informacji.",
        "ソースには記載されていません。",
    ],
)
def test_declines_in_the_dev_sets_languages(answer: str) -> None:
    assert declines(answer)


@pytest.mark.parametrize(
    "answer", ["Henrik Haukeland stood in goal [1].", "It was not until 1930 that it opened [2]."]
)
def test_answers_are_not_declines(answer: str) -> None:
    assert not declines(answer)


def test_an_answer_in_another_language_than_the_question_is_counted() -> None:
    texts = ["Der Turm der Nashorn-Pagode im Zoo Berlin wird 25 Meter hoch."]
    question = "Wie hoch wird der Turm der Nashorn-Pagode im Zoo Berlin?"

    def other(answer: str, language: str = "de") -> bool:
        return grade(record(answer, texts), question, ["25 Meter"], language)["other_language"]

    assert other("The tower of the rhino pagoda in Berlin is 25 meters high [1].")
    assert not other("Der Turm der Nashorn-Pagode wird 25 Meter hoch [1].")
    assert not other("25 Meter [1].")  # too short to tell: not counted
    # Without the dataset's language, the question's own words tell it.
    assert other("The tower of the rhino pagoda in Berlin is 25 meters high [1].", "")
    assert not graded("It is released under the Apache License [1].")["other_language"]


def test_the_gold_sentence_s_citation_is_graded_as_written_and_as_corrected() -> None:
    # The gold answer stated citing the source that lacks it; the check moves it.
    wrong = graded("Docker Engine is released under the Apache License, Version 2.0 [2].")
    assert wrong["correct"] and not wrong["gold_cited"] and wrong["gold_cited_corrected"]
    right = graded("It is released under the Apache License [1].")
    assert right["gold_cited"] and right["gold_cited_corrected"] and right["check_backed"]
    uncited = graded("Docker Engine is released under the Apache License, Version 2.0.")
    assert not uncited["gold_cited"] and uncited["gold_cited_corrected"]
    # A wrong answer is no right answer citing anything.
    assert not graded("It is MIT licensed [1].")["gold_cited_corrected"]


def test_judge_verdicts_kept_with_a_reading_decide_the_pairs_they_answer() -> None:
    # Backed by its words (support 0.72, in the judge's band); the judge kept says no.
    kept = record("Moby is developed on GitHub by Docker [2].")
    [before] = grade(kept, QUESTION, GOLD)["citations"]
    assert before["holds"] == [True]
    claims = settled_claims(QUESTION, kept | {"verdicts": []})
    [pair] = pairs_of(claims, uncertain(claims))
    said_no = kept | {"verdicts": [{"sentence": pair.sentence, "passage": pair.passage,
                                    "source": pair.source, "p": 0.05}]}  # fmt: skip
    grades = grade(said_no, QUESTION, GOLD)
    assert grades["citations"][0]["holds"] == [False] and not grades["check_backed"]
    # A verdict on another pair answers nothing here: the words decide.
    other = said_no | {"verdicts": [said_no["verdicts"][0] | {"source": 1}]}
    assert grade(other, QUESTION, GOLD)["citations"][0]["holds"] == [True]


def test_an_honest_cannot_answer_is_no_claim_the_check_flags() -> None:
    grades = graded("The sources do not say what Docker's license is.")
    assert grades["declined"] and not grades["cited"]
    assert settled_claims(QUESTION, record("The sources do not say."))[0].checked is False
