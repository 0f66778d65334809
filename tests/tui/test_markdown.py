"""Citations in an answer become links that pick their source, and nothing else does."""

from __future__ import annotations

from htmlrag_chat.reader.citation_syntax import RANGE_CAP
from htmlrag_chat.tui.markdown import CitationLinker, cited_numbers, link_citations


def test_citation_groups_become_cite_links_that_read_the_same() -> None:
    text = "ARKit [3]. Both [1, 2]; a range [2-4] and [1][2]."
    assert link_citations(text) == (
        "ARKit [\\[3\\]](cite:3). Both [\\[1, 2\\]](cite:1,2); a range [\\[2-4\\]](cite:2-4)"
        " and [\\[1\\]](cite:1)[\\[2\\]](cite:2)."
    )


def test_doubled_and_hidden_groups_link_as_the_citation_they_show() -> None:
    assert link_citations("ARKit [[3]] and [\u200b2].") == (
        "ARKit [\\[3\\]](cite:3) and [\\[2\\]](cite:2)."
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
    # Stored text is data: no huge lists, the range capped as the citation filter caps it.
    assert cited_numbers("cite:1-999999999") == tuple(range(1, RANGE_CAP + 1))


def test_code_and_escaped_brackets_are_never_linked() -> None:
    text = "Use `arr[1]` [1].\n```\nx[2] = 1\n```\n- Paris \\[3\\] and 1889 \\[2\\]. [1]"
    assert link_citations(text) == (
        "Use `arr[1]` [\\[1\\]](cite:1).\n```\nx[2] = 1\n```\n"
        "- Paris \\[3\\] and 1889 \\[2\\]. [\\[1\\]](cite:1)"
    )


def test_a_streamed_answer_is_linked_as_the_whole_one_is() -> None:
    text = "Intro [1].\n```python\nx[2]\ny[3]\n```\nAfter `z[1]` [2]."
    for size in (1, 2, 3, 5, 8):
        linker = CitationLinker()
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert "".join(map(linker.feed, chunks)) + linker.finish() == link_citations(text)
