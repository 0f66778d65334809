"""How well a passage backs a sentence: numbers as written, terms on the question's subject."""

from __future__ import annotations

import pytest

from htmlrag_chat.evidence.matching import Collection, numbers, read_sentence
from htmlrag_chat.html.passages import Passage


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("1,024 pages and 2.500 Euro", {"1024", "2500"}),
        ("am 28.09.2020", {"28", "9", "2020"}),
        ("beta 3, iOS13, a 4K TV", {"3", "13", "4"}),
        ("pic.twitter.com/U7PMa4oNGN and H2O", set()),
        ("2019年7月3日", {"2019", "7", "3"}),
        ("he took the Fifth twice, zwei Tage", {"2"}),
        ("the High Elf came once in Sept", set()),
        ("el IV Pleno, World War II, Louis XIV. VI.", {"4", "2", "14", "6"}),
        ("I saw X and IIII, XXL, CC BY, Phase IIa", set()),
    ],
)
def test_numbers_as_written(text: str, found: set[str]) -> None:
    assert numbers(text) == found


HYDRANGEA = Passage(1, "Leave one inch of space between the soil and the top of the container.")
LEMON = Passage(2, "The ideal lemon pot is 3 inches in diameter.")
OTHER = Passage(3, "Porto stands on the river Douro, and its bridges are famous.")
QUESTION = "When planting a hydrangea in a container, how much space is left at the top?"
TITLES = {1: "How to plant hydrangeas in pots", 2: "Growing lemons", 3: "Porto"}


def score(collection: Collection, sentence: str, index: int) -> float:
    language = collection.languages[index]
    reading = read_sentence(sentence, collection, language)
    return reading.score(collection.terms[index], collection.topics[index])


def test_the_answer_s_words_on_another_subject_score_below_the_subject_s_own_passage() -> None:
    collection = Collection([HYDRANGEA, LEMON, OTHER], QUESTION, TITLES)
    assert score(collection, "Leave one inch of space.", 0) > score(collection, "3 inches.", 1)
    # The words alone would rank the lemon pot first; the question's subject does not.
    assert score(collection, "3 inches.", 1) < 0.8


def test_what_readers_say_about_their_sources_weighs_nothing() -> None:
    collection = Collection([HYDRANGEA, LEMON, OTHER], QUESTION, TITLES)
    plain = score(collection, "Leave one inch of space.", 0)
    hedged = score(
        collection,
        "According to the information provided in the sources, leave one inch of space.",
        0,
    )
    assert hedged == pytest.approx(plain)


def test_names_weigh_double_and_the_question_s_words_a_third() -> None:
    collection = Collection([HYDRANGEA, LEMON, OTHER], "What is Porto known for?", TITLES)
    reading = read_sentence("Porto has famous Douro bridges.", collection, "en")
    assert reading.terms["douro"] == pytest.approx(2 * collection.idf["douro"])
    assert reading.terms["porto"] == pytest.approx(collection.idf["porto"] / 3)
    assert reading.terms["bridg"] == pytest.approx(collection.idf["bridg"])
    assert set(reading.topic) == {"porto", "known"}


def test_each_passage_is_read_in_its_own_language() -> None:
    german = Passage(1, "Die Software steht unter der Apache-Lizenz und wird gepflegt.")
    collection = Collection([german, OTHER], "Unter welcher Lizenz steht die Software?")
    assert collection.languages == ["de", "en"]
    assert "lizenz" in collection.terms[0]  # "Lizenzen" would stem to the same
    assert score(collection, "Die Software steht unter Apache-Lizenzen.", 0) > 0.8
