"""Claims as JSON records, and the records an older version stored read back."""

from __future__ import annotations

import json

import pytest

from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.evidence.records import claim_from_record, claim_record

QUOTES = (Quote(3, "it simply uses ARKit", 0.9, True), Quote(1, "x", 0.6, True, True))
CLAIM = Claim("It uses ARKit.", (3,), QUOTES, 0.9, True, (), True)


def test_a_record_holds_each_citation_with_its_url_and_reads_back() -> None:
    record = json.loads(
        json.dumps(claim_record(CLAIM, {3: "https://a.test/", 1: "https://b.test/"}))
    )
    assert record == {
        "sentence": "It uses ARKit.",
        "cited": [3],
        "citations": [
            {"source": 3, "url": "https://a.test/", "quote": "it simply uses ARKit", "score": 0.9,
             "backs": True, "added": False},
            {"source": 1, "url": "https://b.test/", "quote": "x", "score": 0.6, "backs": True,
             "added": True},
        ],
        "support": 0.9, "unsupported": False, "missing": [], "checked": True, "looped": False,
        "corrected": [], "judged": None,
    }  # fmt: skip
    assert claim_from_record(record) == CLAIM


def test_a_corrected_and_judged_claim_reads_back_and_one_from_before_them_is_neither() -> None:
    moved = Claim("It uses ARKit.", (2,), QUOTES, 0.9, True, corrected=(3,), judged=0.25)
    record = json.loads(json.dumps(claim_record(moved, {})))
    assert (record["cited"], record["corrected"], record["judged"]) == ([2], [3], 0.25)
    assert claim_from_record(record) == moved
    for older in ("corrected", "judged"):
        del record[older]
    assert claim_from_record(record) == Claim("It uses ARKit.", (2,), QUOTES, 0.9, True)
    assert claim_from_record(claim_record(moved, {}) | {"judged": 7}) is None


def test_a_looped_claim_reads_back_and_a_record_from_before_loops_were_found_does_not_loop() -> (
    None
):
    looped = Claim("the team of the team of the team of the team", (), supported=False, looped=True)
    assert claim_from_record(claim_record(looped, {})) == looped
    record = claim_record(CLAIM, {})
    del record["looped"]
    assert claim_from_record(record) == CLAIM


def test_a_record_stored_before_the_evidence_check_reads_as_a_claim_without_quotes() -> None:
    old = {"sentence": "Paris.", "sources": [1], "support": 0.2, "supported": False}
    assert claim_from_record(old) == Claim("Paris.", (1,), (), 0.2, False)


@pytest.mark.parametrize(
    "record",
    [
        None,
        "text",
        {"sentence": "x"},
        {"sentence": "x", "sources": ["1"], "support": 1, "supported": 1},
    ],
)
def test_a_record_of_neither_shape_is_none(record: object) -> None:
    assert claim_from_record(record) is None
