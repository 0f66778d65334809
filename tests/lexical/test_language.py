"""Language by function words, with a page's verdict for texts too short to tell."""

from __future__ import annotations

import pytest

from htmlrag_chat.lexical.analysis import tokens
from htmlrag_chat.lexical.language import (
    CJK_LANGUAGE,
    detect,
    language_name,
    languages,
    script_language,
    written_in,
)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Welcher Torhüter stand beim Halbfinale im Tor des EHC München?", "de"),
        ("Which nonprofit joined the ACLU in suing the county?", "en"),
        ("¿Cuántos miembros del Comité Central asistieron al pleno?", "es"),
        ("Quel ministre a mis en garde les Français contre l'ibuprofène ?", "fr"),
        ("Com quantos votos Pacheco foi eleito presidente do Senado?", "pt"),
        ("Quanti cuccioli di orso sono stati contati nel parco?", "it"),
        ("Ile dni urlopu dostaną rodzice w Nowej Zelandii? To jest prawo", "pl"),
        ("Kuinka moni suomalainen kokee, että kaamos on ongelma ja mikä auttaa?", "fi"),
    ],
)
def test_questions_in_the_corpus_languages(text, language):
    words, _ = tokens(text)
    assert script_language(text, words) == language


def test_cjk_text_is_marked_for_segmentation():
    text = "子どもへの体罰を禁止する法律ができる"
    assert script_language(text, tokens(text)[0]) == CJK_LANGUAGE


def test_too_few_function_words_decide_nothing():
    assert detect(["bayern", "26", "pkt"]) == ""
    assert detect(["der", "bayern"]) == ""


def test_undecided_texts_take_their_pages_verdict():
    assert languages(["de", "", "de", "", "en"], [0, 0, 0, 1, 1]) == ["de", "de", "de", "en", "en"]
    assert languages(["", ""], [0, 1]) == ["", ""]


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("ما هو الحزب الذي يقوده الصادق المهدي في السودان؟", "ar"),
        ("Какая партия победила на выборах в Думу?", "ru"),
        ("Ποιο κόμμα κέρδισε τις εκλογές;", "el"),
        ("Coinbase 2022", ""),  # Latin letters without function words: undecided
        ("Der Preis in Москва", "de"),  # function words decide first
    ],
)
def test_a_script_names_the_language_where_function_words_do_not(text, language):
    assert script_language(text, tokens(text)[0]) == language


def test_a_language_is_named_only_where_its_function_words_leave_no_doubt() -> None:
    def named(text: str) -> str:
        return language_name(tokens(text)[0])

    assert named("Wie viele Caritas-Altenheime gibt es in der Diözese Münster?") == "German"
    assert named("Quanto tempo durou o encontro entre os dois?") == "Portuguese"
    assert named("How tall is the tower?") == "English"
    # One function word is too few; a tie between two languages names neither.
    assert named("Ile osób liczy podstawowa załoga lotniskowca?") == ""
    assert named("Was kostet die Lackierung beim Plug-in?") == ""
    assert named("Hvad er det, og hvor er den?") == ""  # Danish and Norwegian share the words


def test_a_text_is_written_in_a_language_when_no_other_has_more_of_its_words() -> None:
    def read_as(text: str, language: str) -> bool | None:
        return written_in(tokens(text)[0], language)

    spanish = "Hugo Bustos detectó 112 motorizados robados en Chile que fueron llevados."
    assert read_as(spanish, "es") and read_as(spanish, "fr")  # "en", "que": a tie
    assert read_as("The tower of the zoo is 25 meters high.", "de") is False
    assert read_as("365 000 déplacements", "fr") is None  # no function word: no verdict
