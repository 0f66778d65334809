"""Claims in words: the quote lines under an answer and the flag lines, for every face."""

from __future__ import annotations

from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.evidence.words import (
    QUOTE_CHARS,
    evidence_lines,
    excerpt,
    flag_lines,
    problem,
    shown_quotes,
)

LONG = (
    "Normally, video calls make it look like both people look away. "
    "How iOS 13 FaceTime Attention Correction works: it simply uses ARKit to grab a depth map "
    "of your face, and adjusts the eyes accordingly. Notice the warping of the line across "
    "both the eyes and the nose in the pictures that were shared on Twitter by the developer."
)
SENTENCE = "FaceTime Attention Correction uses ARKit to grab a depth map of the face."


def test_a_long_quote_is_cut_around_the_sentence_s_words() -> None:
    shown = excerpt(LONG, SENTENCE)
    assert len(shown) <= QUOTE_CHARS + 2
    assert shown.startswith("…") and shown.endswith("…")
    assert "uses ARKit to grab a depth map" in shown
    assert all(word in LONG.split() for word in shown.strip("…").split())  # cut between words
    assert excerpt("Short.", SENTENCE) == "Short."


def test_each_cited_sentence_and_its_quotes_the_checker_s_and_the_closest_marked() -> None:
    claims = [
        Claim(SENTENCE, (3,), (Quote(3, LONG, 0.8, True),), 0.8, True),
        Claim(
            "It works on iPhone XS.",
            (),
            (Quote(1, "Only the XS and XS Max.", 0.6, True, True),),
            0.6,
            True,
        ),
        Claim("Here is why:", (), checked=False),
        Claim(
            "It arrived in beta 7.", (3,), (Quote(3, "third beta", 0.3, False),), 0.3, False, ("7",)
        ),
        Claim("It was copied.", (2,), (Quote(2, "It was copied.", 1.0, True),), 1.0, True),
    ]
    lines = evidence_lines(claims)
    assert lines[0] == f"- {SENTENCE}"
    assert lines[1].startswith('  [3] "…') and "ARKit" in lines[1]
    assert lines[2:] == [
        "- It works on iPhone XS.",
        '  [1] added by the checker: "Only the XS and XS Max."',
        "- It arrived in beta 7. (unsupported)",
        '  [3] closest passage, not backing it: "third beta"',
    ]  # nothing for the lead-in, or the passage copied word for word
    assert shown_quotes(claims[4]) == ()
    assert flag_lines(claims) == [
        'unsupported: "It arrived in beta 7." cites [3], but 7 is not in it'
    ]


def test_a_flagged_sentence_shows_no_passage_that_shares_none_of_its_words_nor_a_loop() -> None:
    wrong_source = Claim(
        "It uses ARKit.", (2,), (Quote(2, "Lemons grow.", 0.0, False),), 0.0, False
    )
    looped = Claim("a a a a", (2,), (Quote(2, "a", 0.9, True),), 0.9, False, looped=True)
    assert shown_quotes(wrong_source) == () and shown_quotes(looped) == ()
    assert evidence_lines([wrong_source, looped]) == []


def test_why_a_sentence_is_unsupported() -> None:
    assert problem(Claim("x", (1, 2), (), 0.21, False)) == (
        "cites [1, 2], but no passage of any of them backs it (support 0.21)"
    )
    assert problem(Claim("x", (), (), 0.1, False, ("7", "2019"))) == (
        "cites nothing, and 7, 2019 are not in any source"
    )
    assert problem(Claim("x", (2,), (), 0.0, False, looped=True)) == (
        "cites [2], but it says the same words over and over (the reader looped)"
    )
