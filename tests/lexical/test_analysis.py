"""Terms per language: Snowball stems, compound halves, CJK bigrams; BM25 on them."""

from __future__ import annotations

import pytest

from htmlrag_chat.html.blocks import Document, Page, build_block_tree
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.lexical.analysis import (
    analyze,
    analyze_all,
    bigrams,
    lexical_scores,
    split_compound,
)
from htmlrag_chat.scoring.bm25 import BM25Scorer


@pytest.mark.parametrize(
    ("language", "forms"),
    [
        ("de", ["Altenheime", "Altenheimen"]),
        ("en", ["retailers", "retailer"]),
        ("es", ["vehículos", "vehículo"]),
        ("fr", ["déplacements", "déplacement"]),
        ("it", ["cuccioli", "cucciolo"]),
        ("pt", ["senadores", "senador"]),
        ("pl", ["pierogi", "pierogów"]),
        ("fi", ["prosenttia", "prosentti"]),
        ("hu", ["kekszeket", "keksz"]),
        ("nl", ["boeken", "boek"]),
        ("ar", ["الحزب", "حزب"]),
        ("ru", ["выборах", "выборы"]),
    ],
)
def test_word_forms_of_a_language_share_a_stem(language, forms):
    stems = {term for form in forms for term in analyze(form, language)}
    assert len(stems) == 1


def test_a_language_without_a_stemmer_keeps_casefolded_words():
    assert analyze("Tōkyō Straße 2011", "") == ["tōkyō", "strasse", "2011"]


def test_cjk_runs_become_bigrams_and_a_lone_character_stays():
    assert bigrams("体罰") == ["体罰"]
    terms = ["docker", "東京", "京タ", "タワ", "ワー", "京"]
    assert analyze("東京タワー 京 Docker", "cjk") == terms


def test_compounds_split_into_halves_found_in_the_vocabulary():
    vocabulary = {"fahrer", "check", "qualifying", "statistik", "bürger"}
    assert split_compound("fahrercheck", vocabulary) == ("fahrer", "check")
    assert split_compound("bürgerscheck", vocabulary | {"scheck"}) == ("bürger", "scheck")
    assert split_compound("fahrerlager", vocabulary) is None  # "lager" is not a word here
    assert split_compound("check", vocabulary) is None  # too short to be a compound


def test_a_compound_ending_in_a_word_of_the_question_splits_whatever_its_head():
    # hold-010: "Wie viel Mehl ...?" and the ingredient "350 Gramm Weizenmehl", where
    # "Weizen" is no word of the pages on its own.
    assert split_compound("weizenmehl", {"mehl"}) is None
    assert split_compound("weizenmehl", {"mehl"}, frozenset({"mehl"})) == ("weizen", "mehl")
    texts = [
        "Für den Teig braucht man 350 Gramm Weizenmehl, vier Eier und die Butter.",
        "Dann den Zucker und die Butter mit den Eiern verrühren und den Kuchen backen.",
    ]
    query, documents = analyze_all("Wie viel Mehl braucht man für den Kuchen?", texts, [0, 0])
    assert "mehl" in query and "mehl" in documents[0]
    scores = lexical_scores("Wie viel Mehl braucht man für den Kuchen?", texts, [0, 0])
    assert scores[0] > scores[1]
    # A function word of the question is no tail: "allgemeine" is no "eine".
    _, documents = analyze_all(
        "Was kostet eine Tageskarte?",
        ["Die allgemeine Geschäftsbedingungen gelten für alle Besucher der Therme."],
        [0],
    )
    assert "ein" not in documents[0]


def test_only_compounding_languages_split():
    vocabulary = {"fahrer", "check"}
    query, _ = analyze_all("Was ist der Fahrercheck?", ["Der Fahrer und der Check"], [0])
    assert {"fahr", "check"} <= set(query)
    assert analyze("fahrercheck", "en", vocabulary) == ["fahrercheck"]


def test_a_question_is_also_read_in_the_languages_of_the_texts():
    query, _ = analyze_all("Altenheimen", ["Die Caritas hat viele Altenheime in der Stadt."], [0])
    assert query == ["altenheim", "altenheimen"]  # German, and undecided (as it is)
    query, _ = analyze_all(
        "Wer gewann in Willingen?", ["The Norwegian won the event in Willingen today"], [0]
    )
    assert {"willing", "willingen"} <= set(query)  # as German and English blocks read it


def test_a_text_whose_page_never_tells_takes_the_most_frequent_language():
    texts = ["Die Ergebnisse der Staffel sind hier", "1. TS Göppingen I 50,59 sec."]
    _, documents = analyze_all("Göppingen", texts, [0, 1])
    assert "gopping" in documents[1]  # stemmed as German, like the question's reading


def test_an_inflected_question_finds_the_block_bare_words_miss():
    texts = ["In den 205 Altenheimen der Caritas", "Der Caritas-Chef ist neu"]
    scores = lexical_scores("Wie viele Altenheime hat die Caritas?", texts, [0, 0])
    assert scores[0] > scores[1]


def page(html: str) -> Document:
    return Document.from_pages([(Page("p"), clean_html(html))])


def test_bm25_pruner_scores_are_deterministic_and_language_aware():
    html = (
        "<body><p>Der Turm der Nashorn-Pagode wird 25 Meter hoch.</p>"
        "<p>子どもへの体罰を禁止する法律ができる</p><p>Die Nashörner kommen im Frühjahr.</p>"
        "<p>El fiscal general pidió ampliar el régimen.</p></body>"
    )
    tree = build_block_tree(page(html), 16)
    scorer = BM25Scorer()
    for query, best in (("Wie hoch ist der Turm?", 0), ("体罰", 1), ("fiscales generales", 3)):
        scores = scorer.score(query, tree)
        assert scores == scorer.score(query, build_block_tree(page(html), 16))
        assert scores.index(max(scores)) == best
