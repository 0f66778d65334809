from __future__ import annotations

import pytest

from htmlrag_chat.eval.metrics import answer_present, html_text, kept, normalize


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Apache License, Version 2.0.", "apache license version 20"),
        ("  A  cat\tand\nan   owl ", "cat and owl"),
        ("$170 million", "170 million"),
        ("«Efecto foehn», dijo", "efecto foehn dijo"),
        ("Theory, then anthem", "theory then anthem"),  # articles only as whole words
        ("Henrik_Haukeland", "henrikhaukeland"),
        ("", ""),
    ],
)
def test_normalize_is_squad_style(text, expected):
    assert normalize(text) == expected


def test_snippets_are_counted_when_their_normalized_text_is_present():
    text = "Docker Engine is licensed under the Apache License, Version 2.0. Toggle navigation"
    assert kept(["apache license version 2.0", "TOGGLE  navigation!", "Docker Desktop"], text) == 2
    assert kept(["Docker Desktop"], text) == 0  # a measure that can fail
    assert kept([], text) == 0
    assert kept(["", "..."], text) == 0  # nothing left after normalization never counts


def test_answers_are_found_as_in_htmlrag_and_can_be_missing():
    text = "Founded in 1930, the factory makes fish cakes."
    assert answer_present(["1930"], text)
    assert answer_present(["the year 1931", "1930"], text)
    assert not answer_present(["1931"], text)
    assert not answer_present(["Kimbell Art Museum"], "The Kimbell bought it.")


def test_the_text_of_every_page_in_a_multi_page_context_is_kept():
    context = "\n".join(
        f"<html><head><title>T{i}</title></head><body><p>page {i} text</p></body></html>"
        for i in range(3)
    )
    assert html_text(context) == "T0 page 0 text T1 page 1 text T2 page 2 text"


def test_html_cut_inside_a_tag_still_gives_its_text():
    assert html_text("<html><body><p>kept words</p><p cla") == "kept words"
