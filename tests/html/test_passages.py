"""A source's pruned HTML as passages: sentences, rows under their header, items after
their lead-in."""

from __future__ import annotations

from htmlrag_chat.html.passages import (
    DEFINITION,
    ITEM,
    MAX_CHARS,
    ROW,
    Passage,
    passages,
    sentences,
)


def quotes(html: str) -> list[str]:
    return [passage.quote for passage in passages(1, html)]


def test_prose_is_cut_into_sentences_but_not_at_abbreviations_or_ordinals() -> None:
    assert sentences(
        "It uses ARKit. It warps the eyes! Does it work? Am 28. September spielte z. B. Unia."
    ) == [
        "It uses ARKit.",
        "It warps the eyes!",
        "Does it work?",
        "Am 28. September spielte z. B. Unia.",
    ]
    assert sentences("東京は日本の首都です。人口は多い\uff01とても") == [
        "東京は日本の首都です。",
        "人口は多い\uff01",
        "とても",
    ]


def test_a_table_row_is_read_under_its_header_row() -> None:
    html = (
        "<table><tr><th>Rang</th><th>Verein</th></tr>"
        "<tr><td>8.</td><td>Freiburg (14 Pkt)</td></tr></table>"
    )
    row = passages(2, html)[1]
    assert row == Passage(
        2, "8. | Freiburg (14 Pkt)", "Rang | Verein", ROW, ("8.", "Freiburg (14 Pkt)"),
        ("Rang", "Verein"),
    )  # fmt: skip
    assert row.quote == "Rang | Verein … 8. | Freiburg (14 Pkt)"
    assert row.matched == "Rang | Verein 8. | Freiburg (14 Pkt)"


def test_a_list_item_is_read_after_its_lead_in_and_a_nested_one_after_its_item() -> None:
    html = (
        "<p>Según el sitio, las marcas son las siguientes:</p>"
        "<ul><li>Huawei</li><li>Xiaomi<ul><li>Redmi</li></ul></li></ul><p>Fin.</p>"
    )
    assert quotes(html) == [
        "Según el sitio, las marcas son las siguientes:",
        "Según el sitio, las marcas son las siguientes: … Huawei",
        "Según el sitio, las marcas son las siguientes: … Xiaomi",
        "Xiaomi … Redmi",
        "Fin.",
    ]  # in the order of the page


def test_rows_and_items_are_not_read_again_as_prose_and_empty_ones_are_skipped() -> None:
    html = "<table><tr><td> </td></tr><tr><td>Paris</td></tr></table><ul><li>-</li></ul>"
    assert quotes(html) == ["Paris"]


def test_a_run_without_end_marks_is_cut() -> None:
    [passage] = passages(1, "<p>" + "word " * 400 + "</p>")
    assert len(passage.text) <= MAX_CHARS + 2 and passage.text.endswith(" …")


def test_a_row_keeps_empty_cells_in_line_with_its_header_and_is_labelled_by_its_caption() -> None:
    html = (
        "<h2>Garden</h2><table><caption>Harvest</caption>"
        "<tr><th>Vegetable</th><th>Note</th><th>Weight</th></tr>"
        "<tr><td>courgettes</td><td></td><td>12.4 kg</td></tr></table>"
    )
    row = passages(1, html)[-1]
    assert row.cells == ("courgettes", "", "12.4 kg")
    assert row.header == ("Vegetable", "Note", "Weight")
    assert row.label == "Harvest"  # the caption before the heading above the table
    assert row.matched == "Harvest Vegetable | Note | Weight courgettes | 12.4 kg"
    assert row.quote == "Vegetable | Note | Weight … courgettes | 12.4 kg"  # as shown before


def test_items_and_definitions_are_labelled_by_the_heading_before_their_list() -> None:
    html = (
        "<h2>Chores</h2><p>In turns:</p><ul><li>Anna waters</li></ul>"
        "<h3>Terms</h3><dl><dt>Compost</dt><dt>Humus</dt><dd>rotted leaves</dd>"
        "<dd>turned every 14 days</dd><dt>Mulch</dt><dd>straw</dd></dl><p>The end.</p>"
    )
    found = passages(1, html)
    assert [(p.kind, p.context, p.text, p.label) for p in found] == [
        ("sentence", "", "Chores", ""),
        ("sentence", "", "In turns:", ""),
        (ITEM, "In turns:", "Anna waters", "Chores"),
        ("sentence", "", "Terms", ""),
        (DEFINITION, "Compost / Humus", "rotted leaves", "Terms"),
        (DEFINITION, "Compost / Humus", "turned every 14 days", "Terms"),
        (DEFINITION, "Mulch", "straw", "Terms"),
        ("sentence", "", "The end.", ""),
    ]  # the terms are read with their descriptions, not again as prose


def test_terms_without_a_description_stay_prose() -> None:
    assert quotes("<dl><dt>2 min</dt><dt>04.04.2020</dt></dl>") == ["2 min", "04.04.2020"]
    assert quotes("<dl><dt>Partner</dt><dd> </dd></dl>") == ["Partner"]


def test_only_a_marked_header_row_gives_its_cells_to_the_rows_under_it() -> None:
    plain = passages(1, "<table><tr><td>1 Pck.</td><td>Hefe</td></tr><tr><td>200 g</td>"
                        "<td>Sahne</td></tr></table>")  # fmt: skip
    assert plain[1].context == "1 Pck. | Hefe" and plain[1].header == ()  # context as before
    head = passages(1, "<table><thead><tr><td>Menge</td><td>Zutat</td></tr></thead>"
                       "<tr><td>200 g</td><td>Sahne</td></tr></table>")  # fmt: skip
    assert head[1].header == ("Menge", "Zutat")
