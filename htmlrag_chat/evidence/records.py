"""Claims as JSON records: ``ask --json``, the MCP ``answer`` tool and the history keep them.

One record per sentence: the sentence, the sources it cites, its ``citations`` (each with
source number, URL, quote, score, and whether the checker added it), its support, the
``unsupported`` flag, the numbers none of its sources holds, whether it loops, the sources
the checker cites in its place (``corrected``) and the judge's verdict (``judged``). Answers
stored before the evidence check kept ``{sentence, sources, support, supported}`` per cited
sentence in the same column; those read back as claims without quotes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from htmlrag_chat.evidence.claims import Claim, Quote


def claim_record(claim: Claim, urls: Mapping[int, str]) -> dict[str, Any]:
    return {
        "sentence": claim.sentence,
        "cited": list(claim.cited),
        "citations": [
            {
                "source": quote.source,
                "url": urls.get(quote.source, ""),
                "quote": quote.text,
                "score": quote.score,
                "backs": quote.backs,
                "added": quote.added,
            }
            for quote in claim.quotes
        ],
        "support": claim.support,
        "unsupported": not claim.supported,
        "missing": list(claim.missing),
        "checked": claim.checked,
        "looped": claim.looped,
        "corrected": list(claim.corrected),  # the checker's citation in place of "cited"
        "judged": claim.judged,  # the judge's probability of Yes, where it was asked
    }


def claim_from_record(record: object) -> Claim | None:
    """The claim a record holds, in either shape; None for one that is neither."""
    try:
        if not isinstance(record, Mapping):
            return None
        if "supported" in record:  # before the evidence check: a cited sentence's overlap
            return Claim(
                str(record["sentence"]),
                _numbers(record["sources"]),
                support=float(record["support"]),
                supported=bool(record["supported"]),
            )
        quotes = tuple(
            Quote(
                int(quote["source"]),
                str(quote["quote"]),
                float(quote["score"]),
                bool(quote["backs"]),
                bool(quote["added"]),
            )
            for quote in record["citations"]
        )
        return Claim(
            str(record["sentence"]),
            _numbers(record["cited"]),
            quotes,
            float(record["support"]),
            not record["unsupported"],
            tuple(str(number) for number in record["missing"]),
            bool(record["checked"]),
            bool(record.get("looped", False)),  # not in records written before it was found
            _numbers(record.get("corrected", [])),  # nor these, before corrections and judges
            _probability(record.get("judged")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def stored_claims(records: Sequence[object]) -> list[Claim]:
    """An answer's claims as the history kept them; a record of neither shape is left out
    (an older version, or another tool, wrote it)."""
    return [claim for claim in map(claim_from_record, records) if claim is not None]


def _probability(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError("not a probability")
    return float(value)


def _numbers(values: Any) -> tuple[int, ...]:
    if not isinstance(values, list) or not all(isinstance(v, int) for v in values):
        raise TypeError("not a list of source numbers")
    return tuple(values)
