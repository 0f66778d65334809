"""The judge's part of the check: which quotes it is asked about, and what its Yes or No
does to them; the issue's invented Docker sentence on the demo recording's real pages."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from htmlrag_chat.evidence.claims import THRESHOLD, Claim, Quote, check_answer
from htmlrag_chat.evidence.correction import correct
from htmlrag_chat.evidence.judging import BAND, MAX_PAIRS, Pair, apply, judge_claims, uncertain
from htmlrag_chat.evidence.words import flag_lines
from tests.evidence.test_claims import demo, number_of
from tests.evidence.test_correction import DOCKER

INVENTED = "Docker Engine is used to map the user's face."


class Judge:
    """A judge that answers from a table of sentences (the test's knowledge, not a model's);
    what it was asked is kept."""

    def __init__(self, yes: dict[str, float]) -> None:
        self.yes = yes
        self.asked: list[Pair] = []

    async def __call__(self, pairs: Sequence[Pair]) -> list[float | None]:
        self.asked += pairs
        return [self.yes.get(pair.sentence) for pair in pairs]


def test_the_invented_docker_sentence_backed_by_words_alone_ends_flagged_by_the_judge() -> None:
    question, _, sources = demo("qwen")  # the Docker page pruned as for Qwen's answer
    docker = number_of(sources, DOCKER)
    answer = f"{INVENTED} [{docker}]"
    [lexical] = check_answer(question, answer, sources)
    assert lexical.supported and BAND[0] <= lexical.support < BAND[1]  # the words fooled it

    judge = Judge({INVENTED: 0.08})
    [claim] = correct(
        asyncio.run(judge_claims(check_answer(question, answer, sources, band=BAND), judge))
    )
    assert [pair.source for pair in judge.asked] == [docker]
    assert not claim.supported and claim.judged == 0.08 and claim.corrected == ()
    [flag] = flag_lines([claim])
    assert flag.endswith(
        f"cites [{docker}], but it does not state it (asked, the reader says no: 0.08)"
    )


def test_yes_lifts_a_paraphrase_below_the_threshold_and_no_verdict_leaves_the_words() -> None:
    quote = Quote(1, "passage", 0.5, False)
    claim = Claim("A paraphrase.", (1,), (quote,), 0.5, False)
    assert THRESHOLD > 0.5 and uncertain([claim]) == [(0, 0)]
    [lifted] = apply([claim], [(0, 0)], [0.9])
    assert lifted.supported and lifted.backing == (Quote(1, "passage", 0.5, True),)
    assert apply([claim], [(0, 0)], [None]) == [claim]


def test_only_the_band_is_judged_the_most_uncertain_first_and_at_most_max_pairs() -> None:
    def claim(score: float) -> Claim:
        return Claim(f"S {score}.", (1,), (Quote(1, "p", score, score >= THRESHOLD),), score)

    scores = [0.05, 0.95, *(0.3 + 0.05 * k for k in range(12))]
    asked = uncertain([claim(s) for s in scores])
    assert len(asked) == MAX_PAIRS
    middle = sum(BAND) / 2
    picked = [scores[index] for index, _ in asked]
    assert all(BAND[0] <= s < BAND[1] for s in picked)
    assert max(abs(s - middle) for s in picked) <= min(
        abs(s - middle)
        for i, s in enumerate(scores)
        if i not in {i for i, _ in asked} and BAND[0] <= s < BAND[1]
    )


def test_a_judged_no_on_the_cited_source_and_yes_on_another_moves_the_citation() -> None:
    cited = Quote(2, "Docker passage", 0.7, True)
    other = Quote(1, "Verge passage", 0.6, False, added=True)
    claim = Claim("It uses ARKit.", (2,), (cited, other), 0.7, True)
    [judged] = apply([claim], [(0, 0), (0, 1)], [0.1, 0.9])
    assert not judged.supported and judged.judged == 0.1
    [moved] = correct([judged])
    assert moved.corrected == (1,) and moved.supported
