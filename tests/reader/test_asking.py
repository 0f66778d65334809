"""What a question asks for, by its question words in the languages of the pages."""

from __future__ import annotations

import pytest

from htmlrag_chat.reader.asking import NAME, NUMBER, asked_for


@pytest.mark.parametrize(
    ("question", "wanted"),
    [
        ("How much did the courgette harvest weigh?", NUMBER),
        ("When was the tower finished?", NUMBER),
        ("Wie viele Punkte hat krofisch?", NUMBER),
        ("Vor höchstens wie vielen Stunden muss der Test gemacht sein?", NUMBER),
        ("Seit wann ist Pepemaus Mitglied?", NUMBER),
        ("¿Cuántas horas extras marcó?", NUMBER),
        ("Combien de tonnes sont perdues chaque année ?", NUMBER),
        ("Od ilu lat jest związany z Grupą Amica?", NUMBER),
        ("Hány pontot szerzett?", NUMBER),
        ("日本の人口は何人ですか", NUMBER),
        ("Who waters the beans?", NAME),
        ("Wer erhielt 2014 den Naturschutzpreis?", NAME),  # the year it gives is no question
        ("Wer ist der aktivste Schnäppchenjäger?", NAME),
        ("¿Quién es el comandante?", NAME),
        ("Kto jest autorem artykułu?", NAME),
        ("谁是总统?", NAME),
        ("Which environment variable sets the app key?", ""),
        ("Welches Statement fordert er vom DFB?", ""),
        ("Le joueur qui a marqué, où joue-t-il ?", ""),  # "qui" later is a relative pronoun
        ("Ilex is a holly: what colour are its berries?", ""),  # "ile" only as a word
    ],
)
def test_question_words_say_what_is_asked_for(question: str, wanted: str) -> None:
    assert asked_for(question) == wanted
