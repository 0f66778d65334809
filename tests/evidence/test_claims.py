"""Each sentence of an answer with the passage of its sources that backs it, on the demo
recording's real pages and on small pages made to corner the check."""

from __future__ import annotations

import json
from pathlib import Path

from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import THRESHOLD, Claim, check_answer
from htmlrag_chat.evidence.matching import numbers
from htmlrag_chat.evidence.words import flag_lines, shown_quotes
from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claims"
VERGE = "https://www.theverge.com/2019/7/3/20680681/ios-13-beta-3-facetime-attention-correction-eye-contact"


def source(number: int, html: str, title: str = "", url: str = "") -> Source:
    url = url or f"https://{number}.example/"
    return Source(number, url, title, html, visible_text(parse(html), lines=True))


def demo(model: str) -> tuple[str, str, list[Source]]:
    """A real reader's answer on the demo recording, with the sources it read."""
    record = json.loads((FIXTURES / f"demo_{model}.json").read_text(encoding="utf-8"))
    sources = [source(s["number"], s["content"], s["title"], s["url"]) for s in record["sources"]]
    return record["question"], record["answer"], sources


def number_of(sources: list[Source], url: str) -> int:
    return next(s.number for s in sources if s.url == url)


def test_the_issue_s_three_sentences_on_the_verge_page() -> None:
    question, _, sources = demo("smollm2")
    verge = number_of(sources, VERGE)
    other = next(s.number for s in sources if s.number != verge)
    claim = "FaceTime Attention Correction uses ARKit to grab a depth map of the user's face"
    answer = (
        f"{claim} [{verge}]. {claim} [{other}]. The feature arrived in iOS 13 beta 7 [{verge}]."
    )
    right, wrong_source, wrong_number = check_answer(question, answer, sources)

    assert right.supported and right.cited == (verge,)
    [quote] = right.backing
    assert quote.source == verge and not quote.added
    assert "uses ARKit to grab a depth map" in quote.text
    assert not wrong_source.supported and wrong_source.backing == ()
    # The source it should have cited is found, and shown as the checker's.
    [found] = wrong_source.elsewhere
    assert found.source == verge and found.added and "uses ARKit to grab" in found.text
    # The other words overlap; the number is in no source it cites, and is named; no
    # other source holds it either, so none is offered instead.
    assert not wrong_number.supported and wrong_number.missing == ("7",)
    assert wrong_number.elsewhere == ()
    # Where a lower threshold lets its closest passage reach it, that passage still backs
    # nothing: no passage backs a number its sources lack.
    *_, lenient = check_answer(question, answer, sources, threshold=0.3)
    [closest] = lenient.quotes
    assert lenient.missing == ("7",) and closest.score >= 0.3 and not closest.backs


def test_a_real_reader_that_cites_nothing_and_copies_its_source_gets_added_quotes() -> None:
    """Qwen2.5-Coder-1.5B's answer on the demo: two sentences of the Docker page, cited
    nowhere (it answered the wrong page: the check says what backs a sentence, not whether
    it answers the question)."""
    question, answer, sources = demo("qwen")
    docker = number_of(sources, "https://docs.docker.com/engine/install/")
    claims = check_answer(question, answer, sources)
    assert [c.sentence for c in claims] == [
        "Docker provides binaries for manual installation of Docker Engine.",
        "These binaries are statically linked and can be used on any Linux distribution.",
    ]
    for claim in claims:
        [quote] = claim.backing
        assert claim.cited == () and quote.added and quote.source == docker
        assert quote.text == claim.sentence
    # The model's text is never given citations: the added ones are marked, and apart.
    assert "[" not in answer
    # The same sentence citing The Verge: the wrong source, flagged.
    verge = number_of(sources, VERGE)
    [wrong] = check_answer(question, f"{claims[0].sentence[:-1]} [{verge}].", sources)
    assert not wrong.supported and wrong.cited == (verge,) and wrong.backing == ()


def test_a_real_reader_citing_the_wrong_page_is_shown_the_page_that_backs_it() -> None:
    """Qwen2.5-Coder-1.5B's answer on the demo with the prompt of 6a22a5b: right, from The
    Verge, citing the Docker page. The sentence stays flagged (its [n] is wrong), and The
    Verge's passage is attached as the checker's."""
    question, answer, sources = demo("qwen_wrong_source")
    docker = number_of(sources, "https://docs.docker.com/engine/install/")
    verge = number_of(sources, VERGE)
    [claim] = check_answer(question, answer, sources)
    assert claim.cited == (docker,) and not claim.supported and claim.backing == ()
    [found] = claim.elsewhere
    assert found.source == verge and found.added and found.backs
    assert "it simply uses ARKit to grab a depth map" in found.text
    assert [quote.source for quote in shown_quotes(claim)] == [docker, verge]
    assert flag_lines([claim])[0].endswith(
        f"cites [{docker}], but no passage of it backs it "
        f"(support {claim.support:.2f}); [{verge}] does"
    )


def test_a_sentence_no_source_backs_is_offered_none_instead() -> None:
    """A sentence that is wrong, not misplaced: the other sources are searched and none is
    attached (their closest passages are not shown as backing it)."""
    question, _, sources = demo("qwen_wrong_source")
    docker = number_of(sources, "https://docs.docker.com/engine/install/")
    said = f"FaceTime Attention Correction uses the TrueDepth sonar to grab a heat map [{docker}]."
    [claim] = check_answer(question, said, sources)
    assert not claim.supported and claim.elsewhere == ()
    assert all(quote.source == docker for quote in claim.quotes)


def test_a_reader_that_writes_its_instructions_example_is_flagged() -> None:
    """Qwen2.5-Coder-1.5B answered a question on Rocket League with the example sentence
    its instructions then held, citing a real source ("The tower was completed in 1889
    [2]."; docs/evaluation.md): no page backs it."""
    question, _, sources = demo("qwen")
    cited = f"The tower was completed in 1889 [{sources[0].number}]."  # a source it was given
    [claim] = check_answer(question, cited, sources)
    assert claim.checked and claim.cited == (sources[0].number,) and not claim.supported
    assert claim.missing == tuple(sorted(numbers(claim.sentence) - numbers(question)))
    assert claim.missing  # the example's year is in no source


def test_a_real_reader_s_loose_paraphrases_are_flagged() -> None:
    """SmolLM2-135M's answer on the demo: "a technique called depth mapping", "a 3D image",
    "the eye area of the camera": the page says ARKit grabs a depth map and the eyes are
    adjusted. No sentence is backed, so the answer is not cited."""
    question, answer, sources = demo("smollm2")
    claims = check_answer(question, answer, sources)
    assert len(claims) >= 3 and all(c.checked and c.cited == () for c in claims)
    assert not any(claim.supported for claim in claims)
    invented = next(c for c in claims if "3D image" in c.sentence)
    assert invented.support < min(c.support for c in claims if c is not invented)


def test_a_quote_that_only_repeats_the_question_is_never_the_evidence() -> None:
    question = "Which framework does FaceTime Attention Correction use for the depth map?"
    page = source(
        1,
        "<h2>Which framework does FaceTime Attention Correction use for the depth map?</h2>"
        "<p>Apple relies on ARKit to build a depth map of the face.</p>",
    )
    backed, repeated = check_answer(
        question,
        "FaceTime Attention Correction uses ARKit for the depth map [1]. "
        "FaceTime Attention Correction uses Metal for the depth map [1].",
        [page],
    )
    assert backed.quotes[0].text.startswith("Apple relies on ARKit")
    # The heading holds every word of the question and none of the answer: no evidence.
    assert not repeated.supported and repeated.support < backed.support / 2


TABLE = (
    "<p>Die Tabelle nach dem 10. Spieltag:</p><table>"
    "<tr><th>Rang</th><th>Verein</th><th>Punkte</th></tr>"
    "<tr><td>7.</td><td>Mainz</td><td>15</td></tr>"
    "<tr><td>8.</td><td>Freiburg</td><td>14</td></tr></table>"
)


def test_a_question_on_the_page_backs_nothing() -> None:
    """On a real climbing page (LACRUX): SmolLM2's "Das wäres Klettermagazin." matched the
    page's "Gefällt dir unser Klettermagazin?", and the page only asks whether Ondra leaves
    Black Diamond. A question shares a claim's words and states nothing."""
    page = source(
        1,
        "<p>Das wären Big News! Adam Ondra ist seit vielen Jahren Athlet bei Black Diamond und"
        " pflegt mit seinen Sponsoren langjährige Beziehungen.</p><p>Kehrt Adam Ondra also"
        " Black Diamond bald den Rücken zu und wechselt zum Schweizer Bergsportausrüster"
        " Mammut?</p><p>Gefällt dir unser Klettermagazin? Bei der Lancierung von LACRUX haben"
        " wir entschieden, keine Bezahlschranke einzuführen.</p>",
        "Mammut nimmt Adam Ondra unter Vertrag - LACRUX Klettermagazin",
    )
    question = "Bei welchem Ausrüster war Adam Ondra viele Jahre Athlet, bevor er zu Mammut ging?"
    answer = (
        "Das wäres Klettermagazin. Adam Ondra kehrt Black Diamond den Rücken zu und wechselt"
        " zu Mammut [1]. Adam Ondra war viele Jahre Athlet bei Black Diamond [1]."
    )
    magazine, leaves, athlete = check_answer(question, answer, [page])
    assert not magazine.supported and magazine.quotes == ()
    assert not leaves.supported and leaves.backing == ()
    assert athlete.supported and "seit vielen Jahren Athlet" in athlete.backing[0].text


def test_a_changed_roman_ordinal_is_a_wrong_number() -> None:
    page = source(
        1, "<p>La Estrategia General fue presentada en el II Pleno del Comité Central.</p>"
    )
    right, wrong = check_answer(
        "¿Dónde?",
        "La Estrategia General fue presentada en el II Pleno [1]. La Estrategia General fue"
        " presentada en el IV Pleno [1].",
        [page],
    )
    assert right.supported
    assert not wrong.supported and wrong.missing == ("4",)


def test_a_sentence_that_loops_is_unsupported_though_it_starts_as_its_source() -> None:
    """SmolLM2 on a Brazilian page: the source's first words, then one word over and over."""
    page = source(
        1, "<p>Uma das lideranças da organização contava com PMs para cometer crimes.</p>"
    )
    loop = "Uma das lideranças da organização contava com PMs para a " + "sequência de " * 6
    copy, looped = check_answer(
        "Quem?", f"Uma das lideranças da organização contava com PMs [1]. {loop}[1].", [page]
    )
    assert copy.supported and not copy.looped
    assert looped.looped and not looped.supported and looped.backing == ()
    # A word said twice or three times in a row is no loop.
    [claim] = check_answer("Quem?", "Uma das das lideranças contava contava com PMs [1].", [page])
    assert not claim.looped


def test_a_table_row_backs_a_sentence_with_its_header() -> None:
    question = "Wie viele Punkte hatte Freiburg nach dem 10. Spieltag?"
    right, wrong = check_answer(
        question, "Freiburg hatte 14 Punkte [1]. Freiburg hatte 16 Punkte [1].", [source(1, TABLE)]
    )
    assert right.quotes[0].text == "Rang | Verein | Punkte … 8. | Freiburg | 14"
    assert right.support > 2 * wrong.support
    assert not wrong.supported and wrong.missing == ("16",)


def test_a_list_item_backs_a_sentence_with_its_lead_in() -> None:
    page = source(
        2,
        "<p>Según el sitio, las marcas más agresivas con las apps en segundo plano son:</p>"
        "<ul><li>Nexus 6P</li><li>Huawei</li><li>OnePlus</li></ul>",
    )
    question = "¿Qué marca encabeza la lista de las más agresivas con las apps?"
    [claim] = check_answer(question, "Huawei es una de las marcas más agresivas [2].", [page])
    assert claim.supported
    assert claim.quotes[0].text.endswith("en segundo plano son: … Huawei")


def test_japanese_sentences_are_matched_by_character_pairs_and_numbers() -> None:
    page = source(1, "<p>東京タワーは東京都港区にある電波塔である。高さは333メートルです。</p>")
    right, wrong = check_answer(
        "東京タワーの高さは\uff1f",
        "東京タワーの高さは333メートルです。[1]東京タワーの高さは400メートルです。[1]",
        [page],
    )
    assert right.supported and right.quotes[0].text == "高さは333メートルです。"
    assert not wrong.supported and wrong.missing == ("400",)


def test_lead_ins_questions_and_words_about_the_sources_are_not_checked() -> None:
    page = source(1, "<p>Porto stands on the Douro.</p>")
    claims = check_answer(
        "Where is Porto?",
        "Here is what the sources say:\n- Porto stands on the Douro [1].\nWhere is Porto?",
        [page],
    )
    assert [(c.sentence, c.checked, c.supported) for c in claims] == [
        ("Here is what the sources say:", False, True),
        ("Porto stands on the Douro.", True, True),
        ("Where is Porto?", False, True),
    ]


def test_an_answer_without_sentences_or_sources() -> None:
    assert check_answer("Where?", "", [source(1, "<p>x</p>")]) == []
    [claim] = check_answer("Where is Porto?", "Porto stands on the Douro.", [])
    assert claim == Claim("Porto stands on the Douro.", (), (), 0.0, False)


def test_the_threshold_decides() -> None:
    question, _, sources = demo("smollm2")
    verge = number_of(sources, VERGE)
    answer = f"Attention Correction adjusts where your eyes look [{verge}]."
    [claim] = check_answer(question, answer, sources, threshold=0.0)
    [strict] = check_answer(question, answer, sources, threshold=1.01)
    assert claim.supported and not strict.supported and claim.support == strict.support
    assert 0 < claim.support < 1 and THRESHOLD > 0
