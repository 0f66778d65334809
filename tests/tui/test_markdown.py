"""Citations in an answer become links that pick their source, and nothing else does."""

from __future__ import annotations

from htmlrag_chat.tui.markdown import cited_numbers, link_citations


def test_citation_groups_become_cite_links_that_read_the_same() -> None:
    text = "ARKit [3]. Both [1, 2]; a range [2-4] and [1][2]."
    assert link_citations(text) == (
        "ARKit [\\[3\\]](cite:3). Both [\\[1, 2\\]](cite:1,2); a range [\\[2-4\\]](cite:2-4)"
        " and [\\[1\\]](cite:1)[\\[2\\]](cite:2)."
    )


def test_links_and_non_numbers_are_left_alone() -> None:
    text = "See [the docs](https://example.org) and [5](https://x.test) or [a] and [1a]."
    assert link_citations(text) == text


def test_cited_numbers_reads_only_cite_links() -> None:
    assert cited_numbers("cite:3") == (3,)
    assert cited_numbers("cite:1,2") == (1, 2)
    assert cited_numbers("cite:2-4") == (2, 3, 4)
    assert cited_numbers("https://example.org") == ()
    assert cited_numbers("cite:x") == ()
    assert cited_numbers("cite:1-999999999") == ()  # stored text is data: no huge lists
