"""One citation grammar with one set of caps, and one streaming engine: the citation filter
and the chat app's linker read the same citations and hold back the same text."""

from __future__ import annotations

import re
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from htmlrag_chat.reader.citation_syntax import (
    MAX_GROUP,
    RANGE_CAP,
    CitationStream,
    decided_end,
    expand,
)
from htmlrag_chat.reader.citations import CitationFilter, parse_citations
from htmlrag_chat.tui.markdown import CitationLinker, cited_numbers, link_citations

_HREF = re.compile(r"\]\((cite:[^)]*)\)")


def _group_of_length(length: int) -> str:
    """A valid group of exactly ``length`` characters: [1, 1, ..., 1] padded with spaces."""
    inner = "1"
    while len(inner) + 5 <= length - 2:
        inner += ", 1"
    return "[" + inner.ljust(length - 2) + "]"


def test_the_longest_group_is_a_citation_for_the_filter_and_the_linker_alike() -> None:
    longest, too_long = _group_of_length(MAX_GROUP), _group_of_length(MAX_GROUP + 1)
    assert (len(longest), len(too_long)) == (MAX_GROUP, MAX_GROUP + 1)
    for group, cites in ((longest, True), (too_long, False)):
        text = f"Paris {group}."
        assert bool(parse_citations(text)) is cites
        assert ("](cite:" in link_citations(text)) is cites
        stream = CitationFilter(sources=0)  # every number invented: a citation is removed
        assert (stream.feed(text) + stream.finish() == "Paris.") is cites


def test_a_wide_range_is_capped_the_same_everywhere() -> None:
    wide = tuple(range(5, 5 + RANGE_CAP))
    assert expand("[5-500]") == wide
    assert parse_citations("Paris [5-500].") == [wide]
    [href] = _HREF.findall(link_citations("Paris [5-500]."))
    assert cited_numbers(href) == wide


def test_an_open_group_is_held_back_by_both_streams_until_it_closes() -> None:
    for stream in (CitationFilter(sources=3), CitationLinker()):
        assert stream.feed("Paris [1, ") == "Paris"
        shown = stream.feed("2] is") + stream.finish()
        assert shown.startswith((" [1, 2]", " [\\[1, 2\\]](cite:1,2)"))
        assert shown.endswith(" is")
    # An open bracket longer than any citation is text at once, for both.
    text = "Paris [" + "1, " * MAX_GROUP
    assert decided_end(text) == len(text) - 1  # only the trailing space waits
    assert CitationFilter(sources=3).feed(text) == CitationLinker().feed(text) == text[:-1]


def test_the_engine_hands_only_decided_prose_to_its_caller() -> None:
    seen: list[str] = []

    def decide(prose: str) -> str:
        seen.append(prose)
        return prose.upper()

    stream = CitationStream(decide)
    assert stream.feed("see `x[1]` and [2") == "SEE `x[1]` AND"
    assert stream.feed("] now ") == " [2] NOW"  # the trailing space waits for what follows
    assert stream.interrupt() == " "  # a quote comes next: everything held is decided
    assert stream.finish() == ""
    assert all("`" not in prose for prose in seen)  # code never reaches ``decide``


_PIECES = ["[", "]", "(", " ", ",", "-", "\u2013", "1", "2", "12", "x", ".", "\n", "`", "\\"]
_PIECES += ["[1]", "[2-4]", "[3\u20131]", "[1, 2]", "[1][2]", "`x[1]`", "\\[3]", "[1-99]"]
_PIECES += ["\u200b", "\u00ad", "[[", "]]", "[[1]]", "[\u20602]"]


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(st.sampled_from(_PIECES), max_size=30).map("".join),
    fractions=st.lists(st.floats(0, 1), max_size=8),
)
def test_the_linker_links_exactly_the_groups_the_filter_reads(
    text: str, fractions: list[float]
) -> None:
    linker = CitationLinker()
    bounds = [0, *sorted(int(f * len(text)) for f in fractions), len(text)]
    linked = "".join(linker.feed(text[a:b]) for a, b in pairwise(bounds)) + linker.finish()
    assert linked == link_citations(text)
    assert [cited_numbers(href) for href in _HREF.findall(linked)] == parse_citations(text)
