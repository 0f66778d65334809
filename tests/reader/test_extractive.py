"""The extractive reader: quoted source sentences, rows, items and definitions, each cited,
labelled as extractive, and backed by the evidence check."""

from __future__ import annotations

import asyncio

from htmlrag_chat.evidence.claims import check_answer
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.reader import Source, Turn
from htmlrag_chat.reader.extractive import HEADER, NOTHING, ExtractiveReader, best_passages
from htmlrag_chat.reader.literal import Quoted


def source(number: int, title: str, html: str) -> Source:
    """A source as the agent numbers one: its pruned HTML and that HTML's visible text."""
    text = visible_text(parse(html), lines=True)
    return Source(number, f"https://example.org/{number}", title, html, text)


OTTERS = Source(
    1,
    "https://example.org/otters",
    "Otters",
    "<p>Sea otters live along the coasts of the North Pacific.</p><p>They eat sea urchins, "
    "crabs and clams. Otters use stones as tools to open shells.</p>",
    "Sea otters live along the coasts of the North Pacific.\n"
    "They eat sea urchins, crabs and clams. Otters use stones as tools to open shells.",
)
DOCKER = Source(
    2,
    "https://example.org/docker",
    "Docker",
    "<p>Docker Engine is released under the Apache License, Version 2.0.</p>"
    "<p>Install it with apt.</p>",
    "Docker Engine is released under the Apache License, Version 2.0.\nInstall it with apt.",
)


def answer(question: str, sources: list[Source]) -> str:
    async def run() -> str:
        return "".join([chunk async for chunk in ExtractiveReader().answer(question, sources)])

    return asyncio.run(run())


def test_quotes_the_best_matching_sentence_with_its_source_number() -> None:
    text = answer("Under which license is Docker Engine released?", [OTTERS, DOCKER])
    assert text.startswith(HEADER)
    lines = text.splitlines()
    assert lines[2] == "- Docker Engine is released under the Apache License, Version 2.0. [2]"


def test_every_quoted_sentence_is_supported_by_its_citation() -> None:
    question = "What do sea otters eat and use as tools?"
    text = answer(question, [OTTERS, DOCKER])
    header, *quoted = check_answer(question, text, [OTTERS, DOCKER])
    assert not header.checked  # the line that says what follows
    assert len(quoted) >= 2
    assert all(claim.supported and claim.cited == (1,) for claim in quoted)


def test_says_so_when_nothing_matches() -> None:
    text = answer("Wer gewann die Meisterschaft?", [OTTERS, DOCKER])
    assert text == f"{HEADER}\n\n{NOTHING}"


def test_sentences_never_run_across_blocks() -> None:
    page = source(
        1, "Tower", "<h1>Tower facts without a stop</h1><p>The tower is tall. It is very old!</p>"
    )
    quoted = [p.text for p in best_passages("tower facts tall old", [page], 5)]
    assert sorted(quoted) == ["It is very old!", "The tower is tall.", "Tower facts without a stop"]


def test_a_quoted_sentence_comes_as_quoted_text_with_its_own_citation_after_it() -> None:
    eiffel = source(
        1, "Eiffel", "<p>The Eiffel tower stands in Paris [3] and was finished in 1889 [2].</p>"
    )

    async def run() -> list[str]:
        return [chunk async for chunk in ExtractiveReader().answer("eiffel tower", [eiffel])]

    chunks = asyncio.run(run())
    quoted = [chunk for chunk in chunks if isinstance(chunk, Quoted)]
    # Without the page's own footnote markers, which would read as citations.
    assert quoted == ["The Eiffel tower stands in Paris and was finished in 1889."]
    after = chunks[chunks.index(quoted[0]) + 1]
    assert after == " [1]\n" and not isinstance(after, Quoted)


def follow_up(question: str, sources: list[Source], earlier: str) -> str:
    async def run() -> str:
        history = [Turn(earlier, "...")]
        reader = ExtractiveReader()
        return "".join([chunk async for chunk in reader.answer(question, sources, history)])

    return asyncio.run(run())


LEMONS = source(
    3, "Lemons",
    "<p>Which is the best fertilizer for lemon trees grown indoors?</p>"
    "<p>Water them once a week.</p>",
)  # fmt: skip
FACETIME = source(
    4, "FaceTime",
    "<p>FaceTime Attention Correction uses ARKit to map the face.</p>"
    "<p>The feature only appears to be working on the iPhone XS and XS Max for now.</p>",
)  # fmt: skip


def test_a_follow_up_quotes_the_page_the_conversation_is_about_on_content_words() -> None:
    earlier = "Which framework does FaceTime Attention Correction use?"
    text = follow_up("Which iPhones get it?", [LEMONS, FACETIME, DOCKER], earlier)
    assert text.splitlines()[2:] == [
        "- The feature only appears to be working on the iPhone XS and XS Max for now. [4]"
    ]


def test_stop_words_alone_never_pick_a_sentence() -> None:
    assert answer("Which is it?", [LEMONS]) == f"{HEADER}\n\n{NOTHING}"
    # and a follow-up the sources cannot answer says so, from the page it is about
    earlier = "Which framework does FaceTime Attention Correction use?"
    assert follow_up("Does it cost money?", [LEMONS, FACETIME], earlier).endswith(NOTHING)


HARVEST = source(
    1, "Garden notes",
    "<h2>Harvest</h2><p>What the garden gave this summer, weighed on the kitchen scale.</p>"
    "<table><tr><th>Vegetable</th><th>Weight</th><th>Date</th></tr>"
    "<tr><td>courgettes</td><td>12.4 kg</td><td>9 August</td></tr>"
    "<tr><td>tomatoes</td><td>8.1 kg</td><td>20 August</td></tr></table>"
    "<h2>Chores</h2><p>The beds are cared for in turns:</p>"
    "<ul><li>Anna waters the beans</li><li>Jonas turns the compost</li></ul>"
    "<dl><dt>Compost</dt><dd>turned every 14 days</dd><dt>Mulch</dt><dd>straw</dd></dl>",
)  # fmt: skip


def quoted_lines(question: str, sources: list[Source]) -> list[str]:
    return answer(question, sources).splitlines()[2:]


def test_a_table_row_is_quoted_with_its_header_cells_and_its_table_s_heading() -> None:
    assert quoted_lines("How much did the courgette harvest weigh?", [HARVEST])[0] == (
        "- courgettes, Weight: 12.4 kg, Date: 9 August (Harvest) [1]"
    )


def test_the_question_s_words_in_another_language_ask_for_a_number() -> None:
    ernte = source(
        2, "Ernte",
        "<h2>Ernte</h2><p>Die Zucchini wuchsen dieses Jahr im Hochbeet hinter dem Haus.</p>"
        "<table><tr><th>Gemüse</th><th>Gewicht</th></tr>"
        "<tr><td>Zucchini</td><td>12,4 kg</td></tr></table>",
    )  # fmt: skip
    # The sentence names the courgettes too, but only the row holds a number.
    lines = quoted_lines("Wie viel wogen die Zucchini?", [ernte])
    assert lines[0] == "- Zucchini, Gewicht: 12,4 kg (Ernte) [2]"


def test_a_list_item_is_quoted_after_its_lead_in_and_a_definition_after_its_term() -> None:
    assert quoted_lines("Who waters the beans?", [HARVEST])[0] == (
        "- The beds are cared for in turns: Anna waters the beans (Chores) [1]"
    )
    assert quoted_lines("How often is the compost turned?", [HARVEST])[0] == (
        "- Compost: turned every 14 days (Chores) [1]"
    )


def test_an_item_whose_compound_ends_in_the_question_s_word_answers_it() -> None:
    # hold-010: the ingredient "350 Gramm Weizenmehl" answers "Wie viel Mehl ...?".
    cake = source(
        1,
        "Zitronenkuchen vom Blech",
        "<h2>Zutaten</h2><ul><li>250 Gramm Butter</li><li>350 Gramm Weizenmehl</li></ul>"
        "<p>Dieser saftige Zitronenkuchen vom Blech ist ein echter Kuchenklassiker.</p>",
    )
    lines = quoted_lines("Wie viel Mehl braucht man für den Zitronenkuchen vom Blech?", [cake])
    assert "- Zutaten: 350 Gramm Weizenmehl (Zutaten) [1]" in lines


def test_a_header_row_states_nothing_and_is_never_quoted() -> None:
    lines = quoted_lines("Which weight and date?", [HARVEST])
    assert lines and not any("Vegetable" in line for line in lines)


def test_a_wide_row_is_quoted_by_its_first_cell_the_cells_asked_about_and_the_answer() -> None:
    wide = source(
        3, "Results",
        "<table><tr><th>Team</th><th>Played</th><th>Won</th><th>Lost</th><th>Goals</th>"
        "<th>Points</th></tr><tr><td>Kiel</td><td>18</td><td>14</td><td>4</td><td>+90</td>"
        "<td>28</td></tr></table>",
    )  # fmt: skip
    assert quoted_lines("How many points has Kiel?", [wide]) == [
        "- Kiel, Played: 18, Points: 28 [3]"
    ]


def test_every_quoted_row_item_and_definition_is_backed_by_the_evidence_check() -> None:
    for question in (
        "How much did the courgette harvest weigh?",
        "Who waters the beans?",
        "How often is the compost turned?",
    ):
        text = answer(question, [HARVEST])
        header, *quoted = check_answer(question, text, [HARVEST])
        assert not header.checked
        assert quoted and all(claim.supported and claim.cited == (1,) for claim in quoted)


def test_a_table_without_a_header_row_is_quoted_cell_after_cell_its_first_row_too() -> None:
    # An ingredient table: its first row names no column and is an answer like the others.
    recipe = source(
        4, "Muffins",
        "<h2>Zutaten</h2><table><tr><td>1 Pck.</td><td>Trockenbackhefe</td></tr>"
        "<tr><td>200 g</td><td>Schlagsahne</td></tr></table>",
    )  # fmt: skip
    assert quoted_lines("Wie viel Schlagsahne braucht man?", [recipe])[0] == (
        "- 200 g, Schlagsahne (Zutaten) [4]"
    )
    assert quoted_lines("Wie viel Trockenbackhefe braucht man?", [recipe])[0] == (
        "- 1 Pck., Trockenbackhefe (Zutaten) [4]"
    )


def test_a_cell_that_repeats_its_header_s_words_is_quoted_once() -> None:
    prices = source(
        5, "Preise",
        "<table><thead><tr><td>Saison</td><td>Preis/Nacht</td></tr></thead>"
        "<tr><td>Vorsaison</td><td>Preis/Nacht 88,00 €</td></tr></table>",
    )  # fmt: skip
    assert quoted_lines("Was kostet eine Nacht in der Vorsaison?", [prices]) == [
        "- Vorsaison, Preis/Nacht 88,00 € [5]"
    ]


def test_a_label_after_a_row_that_ends_a_sentence_goes_first_and_the_check_backs_all() -> None:
    cookies = source(
        6, "Datenschutz",
        "<h3>Cookies</h3><table><tr><th>Cookie</th><th>Dauer</th><th>Beschreibung</th></tr>"
        "<tr><td>__stripe_mid</td><td>1 year</td><td>This cookie is set by Stripe. It is used to "
        "enable payment on the website.</td></tr></table>",
    )  # fmt: skip
    question = "Wie lange ist das Cookie __stripe_mid gespeichert?"
    text = answer(question, [cookies])
    assert text.splitlines()[2] == (
        "- (Cookies) __stripe_mid, Dauer: 1 year, Beschreibung: This cookie is set by Stripe. "
        "It is used to enable payment on the website. [6]"
    )
    _, *quoted = check_answer(question, text, [cookies])
    assert quoted and all(claim.supported for claim in quoted)
