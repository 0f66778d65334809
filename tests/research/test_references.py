"""One numbering for a report: pages once, in the order the report cites them, and every
part's text and claims renumbered to it."""

from __future__ import annotations

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.research.references import number_references, renumber_claims, renumber_text


def source(number: int, url: str, html: str = "") -> Source:
    return Source(number, url, url.rsplit("/", 1)[-1], html or f"<p>{url}</p>", url)


def answer(sources: list[Source], claims: list[Claim], text: str = "") -> Answer:
    return Answer("q", text, "openai", "m", claims, 0, [], Research(sources, rounds=1))


def test_pages_are_numbered_once_in_the_order_the_report_cites_them() -> None:
    a, b, c = "https://a.example/1", "https://b.example/2", "https://c.example/3"
    first = answer(
        [source(1, a), source(2, b)], [Claim("B says so.", (2,), (Quote(2, "B", 0.9, True),))]
    )
    # The second part read page b too (pruned for it: another piece) and cites page c.
    second = answer(
        [source(1, b, "<p>other piece</p>"), source(2, c)],
        [Claim("C says so.", (2,), (Quote(2, "C", 0.9, True),))],
    )
    numbering = number_references([first, None, second])
    assert [s.url for s in numbering.references] == [b, c, a]  # cited first, then read
    assert [s.number for s in numbering.references] == [1, 2, 3]
    assert numbering.maps == [{1: 3, 2: 1}, {}, {1: 1, 2: 2}]
    # Page b as both parts read it: the pieces together, for a follow-up to read.
    assert numbering.references[0].html == f"<p>{b}</p>\n<p>other piece</p>"


def test_citation_groups_are_renumbered_and_literal_brackets_kept() -> None:
    numbers = {1: 4, 2: 1, 3: 2}
    text = "Built in 1889 [1]. Both say it [1, 2][3] and [2-3]. Moved [[2]]† `x[1]` \\[1\\]."
    assert renumber_text(text, numbers) == (
        "Built in 1889 [4]. Both say it [4, 1][2] and [1, 2]. Moved [1]† `x[1]` \\[1\\]."
    )


def test_claims_cite_quote_and_correct_the_report_numbers() -> None:
    claim = Claim(
        "It opened in 1889.",
        cited=(1,),
        quotes=(Quote(1, "closest", 0.2, False), Quote(2, "backs", 0.9, True, added=True)),
        supported=True,
        corrected=(2,),
    )
    [moved] = renumber_claims([claim], {1: 5, 2: 3})
    assert moved.cited == (5,) and moved.corrected == (3,) and moved.shown == (3,)
    assert [quote.source for quote in moved.quotes] == [5, 3]
    assert moved.sentence == claim.sentence
