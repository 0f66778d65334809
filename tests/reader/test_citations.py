from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from htmlrag_chat.reader import Source
from htmlrag_chat.reader.citation_syntax import CORRECTED, MAX_GROUP
from htmlrag_chat.reader.citations import (
    CitationFilter,
    answer_sentences,
    escape_markers,
    parse_citations,
    recite,
)


def filter_citations(text: str, sources: int) -> tuple[str, int]:
    """The whole text through the streaming filter in one piece: what it shows, and how
    many numbers it removed."""
    stream = CitationFilter(sources)
    return stream.feed(text) + stream.finish(), stream.removed


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("Paris [1].", [(1,)]),
        ("Paris [1, 3].", [(1, 3)]),
        ("Paris [1,3].", [(1, 3)]),
        ("Paris [2-4].", [(2, 3, 4)]),
        ("Paris [2\u20134].", [(2, 3, 4)]),
        ("Paris [4-2].", [(2, 3, 4)]),
        ("Paris [1, 3-4].", [(1, 3, 4)]),
        ("Paris [1][2].", [(1,), (2,)]),
        ("Paris [1-100].", [tuple(range(1, 21))]),
        ("Paris [a], [1.5], [] and [the city](https://paris.fr) [1](https://x.org).", []),
        ("Paris \\[3\\] and \\[1, 2\\] [1].", [(1,)]),  # escaped: the source's own markers
    ],
)
def test_parse_every_syntax(text: str, groups: list[tuple[int, ...]]) -> None:
    assert parse_citations(text) == groups


@pytest.mark.parametrize(
    ("text", "expected", "removed"),
    [
        ("Paris is the capital [1, 3].", "Paris is the capital [1, 3].", 0),
        ("Paris is the capital [1-3].", "Paris is the capital [1-3].", 0),
        ("Paris is the capital [1, 7].", "Paris is the capital [1].", 1),
        ("Paris is the capital [2-5].", "Paris is the capital [2].", 1),  # 5: no such source
        ("Paris is the capital [1,1, 9].", "Paris is the capital [1].", 1),
        ("Paris is the capital [9].", "Paris is the capital.", 1),
        ("Paris [0] and Lyon [4-5] are cities.", "Paris and Lyon are cities.", 3),
        ("Paris [3-1] and Lyon [1 - 3].", "Paris [3-1] and Lyon [1 - 3].", 0),
        ("Paris [9][2] is big.", "Paris [2] is big.", 1),
        ("Paris [1][9] and [8][9].", "Paris [1] and.", 3),
        ("Paris [1-30] is big.", "Paris [1] is big.", 1),  # not every source: 1 was named
        ("A [text](https://x.org), [a], [1.5], [] and [9](https://x.org) stay.", None, 0),
    ],
)
def test_filter_citations_keeps_only_valid_numbers(
    text: str, expected: str | None, removed: int
) -> None:
    assert filter_citations(text, sources=3) == (expected or text, removed)


def test_a_range_to_a_source_that_does_not_exist_cites_only_its_real_ends() -> None:
    """``[1-99]`` of five sources is a slip, not a citation of all five: only the end the
    model named that exists is kept, and the one that does not is counted as removed."""
    assert filter_citations("Paris [1-99].", sources=5) == ("Paris [1].", 1)
    assert filter_citations("Paris [99-3].", sources=5) == ("Paris [3].", 1)
    assert filter_citations("Paris [7-99].", sources=5) == ("Paris.", 2)
    assert filter_citations("Paris [2, 4-99].", sources=5) == ("Paris [2, 4].", 1)
    # A real range is every source in it, capped at 20 numbers and shown as written.
    assert filter_citations("Paris [2-4].", sources=5) == ("Paris [2-4].", 0)
    assert filter_citations("Paris [1-100].", sources=100) == ("Paris [1-100].", 0)


@pytest.mark.parametrize(
    ("text", "expected", "removed"),
    [
        ("Otters [\u200b99].", "Otters.", 1),  # zero-width space
        ("Otters [9\u00ad9].", "Otters.", 1),  # soft hyphen
        ("Otters [42\u2060].", "Otters.", 1),  # word joiner
        ("Otters [\ufeff1\u200e, \u200f99].", "Otters [1].", 1),  # BOM, bidi marks
        ("Otters [\u200b1].", "Otters [1].", 0),  # read as the citation it spells
        ("Otters [1\u200b][\u206099].", "Otters [1].", 1),
        ("A \u200bword\u00ad and \u200c in Persian \u0645\u200c\u0627 stay [1].", None, 0),
        ("Otters [[99]].", "Otters.", 1),  # no "[]" left behind
        ("Otters [[1]] and [[1, 99]].", "Otters [1] and [1].", 1),
        ("Otters [[\u200b99]].", "Otters.", 1),
    ],
)
def test_hidden_and_doubled_citations_are_read_as_they_show(
    text: str, expected: str | None, removed: int
) -> None:
    assert filter_citations(text, sources=1) == (expected or text, removed)


def test_invisible_characters_cut_from_their_group_by_the_stream_are_still_dropped() -> None:
    stream = CitationFilter(sources=1)
    pieces = ["Otters [", "\u200b" * 500, "9", "\u00ad", "9", "]", " swim [\u2060", "1]."]
    shown = "".join(stream.feed(piece) for piece in pieces) + stream.finish()
    assert shown == "Otters swim [1]."
    assert stream.removed_numbers == [99]


def test_filter_counts_removed_numbers_across_chunks() -> None:
    stream = CitationFilter(sources=2)
    shown = [stream.feed(chunk) for chunk in ["Paris [", "1, 5", "]. Rome [7", "]."]]
    assert "".join(shown) + stream.finish() == "Paris [1]. Rome."
    assert stream.removed == 2
    assert stream.removed_numbers == [5, 7]


def test_plain_text_streams_without_delay() -> None:
    stream = CitationFilter(sources=3)
    assert stream.feed("Hello world") == "Hello world"
    assert (
        stream.feed(", a [b] and [the link](https://x.org)")
        == ", a [b] and [the link](https://x.org)"
    )


def test_only_a_trailing_space_waits_for_the_next_character() -> None:
    # It goes if a removed citation follows ("Hello world [9]." -> "Hello world."); being
    # blank, holding it delays nothing the user could see.
    stream = CitationFilter(sources=3)
    assert stream.feed("Hello world ") == "Hello world"
    assert stream.feed("again") == " again"


def test_open_citation_is_held_until_decided() -> None:
    stream = CitationFilter(sources=3)
    assert stream.feed("Paris [1") == "Paris"
    assert stream.feed(", 2]") == ""  # a "(" next would make it a link
    assert stream.feed(" is") == " [1, 2] is"


def test_stream_ending_mid_citation_releases_it() -> None:
    stream = CitationFilter(sources=3)
    assert stream.feed("see [1") == "see"
    assert stream.finish() == " [1"


def test_overlong_group_is_released_as_text() -> None:
    stream = CitationFilter(sources=3)
    text = "[" + ", ".join(str(n) for n in range(1, 15))
    assert len(text) > MAX_GROUP
    assert stream.feed(text) == text


def _streamed(text: str, cuts: list[int], sources: int) -> tuple[str, int]:
    stream = CitationFilter(sources)
    bounds = [0, *sorted(cuts), len(text)]
    shown = [stream.feed(text[start:end]) for start, end in pairwise(bounds)]
    return "".join(shown) + stream.finish(), stream.removed


_PIECES = [
    "[",
    "]",
    "(",
    " ",
    ",",
    "-",
    "\u2013",
    "1",
    "2",
    "9",
    "12",
    "x",
    ".",
    "\n",
    "[1]",
    "[9]",
]
_PIECES += [
    "`",
    "``",
    "```",
    "\n```\n",
    "~~~",
    "\\",
    "\\[9]",
    "`x[9]`",
    "[1, 9]",
    "[2-4]",
    "[3\u20131]",
    "](",
    "Paris",
    "[a]",
    " [7]",
    "[1][2]",
    "][",
    "[1][9",
    "[9][",
    "\u200b",
    "\u00ad",
    "\u2060\u2060",
    "[[",
    "]]",
    "[[9]]",
    "[1-99]",
    "[\u200b9]",
]


@settings(max_examples=400, deadline=None)
@given(
    text=st.one_of(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join), st.text()),
    fractions=st.lists(st.floats(0, 1), max_size=12),
    sources=st.integers(0, 5),
)
def test_streaming_equals_filtering_the_whole_text(
    text: str, fractions: list[float], sources: int
) -> None:
    cuts = [int(fraction * len(text)) for fraction in fractions]
    assert _streamed(text, cuts, sources) == filter_citations(text, sources)


def sentences(answer: str, numbers: tuple[int, ...] = (1, 2)) -> list[tuple[str, tuple[int, ...]]]:
    return [(s.text, s.sources) for s in answer_sentences(answer, numbers)]


def test_every_sentence_is_read_with_what_it_cites() -> None:
    answer = "The tower is 330 metres tall [1]. It stands in Paris. Python is new [2, 1, 2]."
    assert sentences(answer) == [
        ("The tower is 330 metres tall.", (1,)),
        ("It stands in Paris.", ()),
        ("Python is new.", (2, 1)),
    ]


def test_japanese_sentences_end_at_their_own_marks() -> None:
    answer = "東京タワーの高さは333メートルです。[1]東京タワーは青色に塗られている。[1]"
    assert sentences(answer) == [
        ("東京タワーの高さは333メートルです。", (1,)),
        ("東京タワーは青色に塗られている。", (1,)),
    ]


def test_citation_after_sentence_end_belongs_to_that_sentence() -> None:
    answer = "The tower is 330 metres tall. [1] Python 3.12 was released in 2023. [2]\nNo citation."
    assert sentences(answer) == [
        ("The tower is 330 metres tall.", (1,)),
        ("Python 3.12 was released in 2023.", (2,)),
        ("No citation.", ()),
    ]


def test_abbreviation_and_list_items_split_sensibly() -> None:
    answer = "Some towers, e.g. the Eiffel Tower, are tall [1].\n- Python 3.12 was released [2]"
    assert sentences(answer) == [
        ("Some towers, e.g. the Eiffel Tower, are tall.", (1,)),
        ("Python 3.12 was released", (2,)),
    ]


def test_an_ordinal_alone_ends_no_sentence_but_a_number_after_words_does() -> None:
    # A quoted table row or list item starts with its rank (escaped, as the extractive
    # reader quotes it); an answer's last number ends its sentence as before.
    answer = "- 2\\. THW Kiel 18 28 : 8 +90 [2]\nThe score was 12. It held [1]."
    assert sentences(answer) == [
        ("2. THW Kiel 18 28: 8 +90", (2,)),
        ("The score was 12.", ()),
        ("It held.", (1,)),
    ]


def test_invalid_numbers_are_not_cited() -> None:
    answer = "The tower is 330 metres tall [1, 9]. Rome is old [9]."
    assert sentences(answer, (1,)) == [
        ("The tower is 330 metres tall.", (1,)),
        ("Rome is old.", ()),
    ]


def test_lines_without_words_are_no_sentences() -> None:
    assert sentences("") == []
    assert sentences("---\n[1]\n- \n## Paris\n") == [("Paris", ())]


# -- code and quoted source text cite nothing and are never rewritten


CODE_ANSWER = (
    "Take the first item with `arr[0]` or `items[9]` [1].\n"
    "```python\n"
    "x[1] = y[9]  # [9] here is code\n"
    "```\n"
    "~~~\n"
    "z[12]\n"
    "~~~\n"
    "Then call ``f[`0`]`` again [9]."
)


def test_code_spans_and_fences_are_never_rewritten() -> None:
    shown, removed = filter_citations(CODE_ANSWER, sources=1)
    assert shown == CODE_ANSWER.replace(" [9].", ".")  # only the prose's invented [9] goes
    assert removed == 1


def test_code_split_across_chunks_is_still_code() -> None:
    stream = CitationFilter(sources=1)
    pieces = ["Use `", "arr[", "0]", "` and\n``", "`\nx[9", "]\n`", "``\nbad [9]"]
    shown = "".join(stream.feed(piece) for piece in pieces) + stream.finish()
    assert shown == "Use `arr[0]` and\n```\nx[9]\n```\nbad"
    assert stream.removed == 1


def test_quoted_source_text_goes_around_the_filter() -> None:
    stream = CitationFilter(sources=1)
    before = stream.feed("- ")
    held = stream.before_quote()
    after = stream.feed(" [1]\n") + stream.finish()
    assert before + held == "- " and after == " [1]\n" and stream.removed == 0


def test_escape_markers_escapes_citation_groups_only() -> None:
    text = "Paris [3], [1, 2] and [4][5]; not [x], [the link](https://a.b) or [6](https://c.d)."
    assert escape_markers(text) == (
        "Paris \\[3\\], \\[1, 2\\] and \\[4\\]\\[5\\]; not [x], [the link](https://a.b)"
        " or [6](https://c.d)."
    )
    assert parse_citations(escape_markers(text)) == []


def test_a_quoted_sentence_cites_only_its_own_source_and_reads_as_quoted() -> None:
    page = Source(
        1, "https://a.example/", "Eiffel", "<p>...</p>",
        "The Eiffel tower stands in Paris [3] and was finished in 1889 [2].",
    )  # fmt: skip
    others = [
        Source(n, f"https://{n}.example/", "Other", "<p>...</p>", "Bananas are yellow.")
        for n in (2, 3)
    ]
    markdown = "- The Eiffel tower stands in Paris \\[3\\] and was finished in 1889 \\[2\\]. [1]"
    assert sentences(markdown, (page.number, *(o.number for o in others))) == [
        ("The Eiffel tower stands in Paris [3] and was finished in 1889 [2].", (1,))
    ]


def test_brackets_in_code_cite_nothing() -> None:
    answer = "The tower was finished in 1889, see `towers[2]` [1].\n```\nyear = built[2]\n```"
    assert sentences(answer)[0] == ("The tower was finished in 1889, see `towers[2]`.", (1,))


def test_recite_replaces_a_sentence_s_citations_and_places_one_where_none_was() -> None:
    answer = (
        "- First [1].\n- It uses ARKit [2][3], see `a[2]`.\n\n"
        "```\nx[2]\n```\nNo citation here. Last one \\[2\\] [2]."
    )
    changes = {"It uses ARKit, see `a[2]`.": f"[1]{CORRECTED}", "No citation here.": "[3]"}
    shown = recite(answer, [1, 2, 3], changes)
    assert shown == (
        f"- First [1].\n- It uses ARKit [1]{CORRECTED}, see `a[2]`.\n\n"
        "```\nx[2]\n```\nNo citation here [3]. Last one \\[2\\] [2]."
    )
    # The sentences read the same as before, but for what they cite.
    assert [s.text for s in answer_sentences(shown, [1, 2, 3])] == [
        s.text for s in answer_sentences(answer, [1, 2, 3])
    ]
    assert recite(answer, [1, 2, 3], {}) == answer
