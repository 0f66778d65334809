"""Citations the check proves wrong, corrected in the answer and marked; on the demo
recording's real pages (the issue's case: The Verge's words cited as the Docker page's)."""

from __future__ import annotations

from htmlrag_chat.evidence.claims import Claim, Quote, check_answer
from htmlrag_chat.evidence.correction import MARK, correct, corrected_answer, unmarked
from htmlrag_chat.evidence.words import correction_lines, flag_lines
from tests.evidence.test_claims import VERGE, demo, number_of

DOCKER = "https://docs.docker.com/engine/install/"
SAID = "FaceTime Attention Correction uses ARKit to grab a depth map of the user's face"


def test_a_sentence_citing_the_wrong_source_is_shown_citing_the_one_that_backs_it() -> None:
    question, _, sources = demo("smollm2")
    verge, docker = number_of(sources, VERGE), number_of(sources, DOCKER)
    answer = f"{SAID} [{docker}]."
    [claim] = correct(check_answer(question, answer, sources))

    assert claim.cited == (docker,) and claim.corrected == (verge,) and claim.shown == (verge,)
    assert claim.supported and not flag_lines([claim])
    [quote] = claim.backing
    assert quote.source == verge and quote.added and "uses ARKit to grab" in quote.text
    numbers = [s.number for s in sources]
    assert corrected_answer(answer, [claim], numbers) == f"{SAID} [{verge}]{MARK}."
    assert correction_lines([claim]) == [
        f'corrected: "{SAID}." cited [{docker}], which does not back it; [{verge}] does'
    ]


def test_a_changed_number_is_never_corrected_to_a_source_that_shares_the_other_words() -> None:
    question, _, sources = demo("smollm2")
    verge = number_of(sources, VERGE)
    [claim] = correct(
        check_answer(question, f"The feature arrived in iOS 13 beta 7 [{verge}].", sources)
    )
    assert not claim.supported and claim.corrected == () and claim.missing == ("7",)
    assert flag_lines([claim]) and not correction_lines([claim])


def test_a_sentence_its_citation_backs_and_one_nothing_backs_are_left_as_they_are() -> None:
    question, _, sources = demo("smollm2")
    verge = number_of(sources, VERGE)
    right, invented = correct(
        check_answer(question, f"{SAID} [{verge}]. Lyon builds submarines [{verge}].", sources)
    )
    assert right.supported and right.corrected == ()
    assert not invented.supported and invented.corrected == ()


def test_a_sentence_citing_nothing_gets_the_source_the_checker_found() -> None:
    question, _, sources = demo("smollm2")
    verge = number_of(sources, VERGE)
    [claim] = correct(check_answer(question, f"{SAID}.", sources))
    assert claim.cited == () and claim.corrected == (verge,)
    assert correction_lines([claim]) == [f'corrected: "{SAID}." cited nothing; [{verge}] backs it']
    assert corrected_answer(f"{SAID}.", [claim], [verge]) == f"{SAID} [{verge}]{MARK}."


def test_the_rewrite_touches_only_the_corrected_sentence_and_never_literal_text() -> None:
    moved = Claim("It uses ARKit.", (2,), (Quote(1, "x", 0.9, True, True),), 0.9, True, (), True)
    moved = Claim(moved.sentence, moved.cited, moved.quotes, corrected=(1,))
    answer = "Intro `x[2]` stays [3]. It uses ARKit [2][4]. Done [2]."
    shown = corrected_answer(answer, [moved], [1, 2, 3, 4])
    assert shown == f"Intro `x[2]` stays [3]. It uses ARKit [1]{MARK}. Done [2]."
    assert unmarked(shown) == "Intro `x[2]` stays [3]. It uses ARKit [1]. Done [2]."
