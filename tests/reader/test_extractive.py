"""The extractive reader: quoted source sentences, each cited, labelled as extractive."""

from __future__ import annotations

import asyncio

from htmlrag_chat.evidence.claims import check_answer
from htmlrag_chat.reader import Source, Turn
from htmlrag_chat.reader.extractive import HEADER, NOTHING, ExtractiveReader, split_sentences
from htmlrag_chat.reader.literal import Quoted

OTTERS = Source(
    1,
    "https://example.org/otters",
    "Otters",
    "<p>Sea otters live along the coasts of the North Pacific.</p><p>They eat sea urchins, "
    "crabs and clams. Otters use stones as tools to open shells.</p>",
    "Sea otters live along the coasts of the North Pacific.\n"
    "They eat sea urchins, crabs and clams. Otters use stones as tools to open shells.",
)
DOCKER = Source(
    2,
    "https://example.org/docker",
    "Docker",
    "<p>Docker Engine is released under the Apache License, Version 2.0.</p>"
    "<p>Install it with apt.</p>",
    "Docker Engine is released under the Apache License, Version 2.0.\nInstall it with apt.",
)


def answer(question: str, sources: list[Source]) -> str:
    async def run() -> str:
        return "".join([chunk async for chunk in ExtractiveReader().answer(question, sources)])

    return asyncio.run(run())


def test_quotes_the_best_matching_sentence_with_its_source_number() -> None:
    text = answer("Under which license is Docker Engine released?", [OTTERS, DOCKER])
    assert text.startswith(HEADER)
    lines = text.splitlines()
    assert lines[2] == "- Docker Engine is released under the Apache License, Version 2.0. [2]"


def test_every_quoted_sentence_is_supported_by_its_citation() -> None:
    question = "What do sea otters eat and use as tools?"
    text = answer(question, [OTTERS, DOCKER])
    header, *quoted = check_answer(question, text, [OTTERS, DOCKER])
    assert not header.checked  # the line that says what follows
    assert len(quoted) >= 2
    assert all(claim.supported and claim.cited == (1,) for claim in quoted)


def test_says_so_when_nothing_matches() -> None:
    text = answer("Wer gewann die Meisterschaft?", [OTTERS, DOCKER])
    assert text == f"{HEADER}\n\n{NOTHING}"


def test_sentences_never_run_across_blocks() -> None:
    assert split_sentences("Title without a stop\nFirst one. Second one! Third?") == [
        "Title without a stop",
        "First one.",
        "Second one!",
        "Third?",
    ]
    assert split_sentences("東京は首都です。大阪は大きい。") == [
        "東京は首都です。",
        "大阪は大きい。",
    ]


def test_a_quoted_sentence_comes_as_quoted_text_with_its_own_citation_after_it() -> None:
    eiffel = Source(
        1, "https://a.example/", "Eiffel", "<p>...</p>",
        "The Eiffel tower stands in Paris [3] and was finished in 1889 [2].",
    )  # fmt: skip

    async def run() -> list[str]:
        return [chunk async for chunk in ExtractiveReader().answer("eiffel tower", [eiffel])]

    chunks = asyncio.run(run())
    quoted = [chunk for chunk in chunks if isinstance(chunk, Quoted)]
    # Without the page's own footnote markers, which would read as citations.
    assert quoted == ["The Eiffel tower stands in Paris and was finished in 1889."]
    after = chunks[chunks.index(quoted[0]) + 1]
    assert after == " [1]\n" and not isinstance(after, Quoted)


def follow_up(question: str, sources: list[Source], earlier: str) -> str:
    async def run() -> str:
        history = [Turn(earlier, "...")]
        reader = ExtractiveReader()
        return "".join([chunk async for chunk in reader.answer(question, sources, history)])

    return asyncio.run(run())


LEMONS = Source(
    3, "https://example.org/lemons", "Lemons", "<p>...</p>",
    "Which is the best fertilizer for lemon trees grown indoors?\nWater them once a week.",
)  # fmt: skip
FACETIME = Source(
    4, "https://example.org/facetime", "FaceTime", "<p>...</p>",
    "FaceTime Attention Correction uses ARKit to map the face.\n"
    "The feature only appears to be working on the iPhone XS and XS Max for now.",
)  # fmt: skip


def test_a_follow_up_quotes_the_page_the_conversation_is_about_on_content_words() -> None:
    earlier = "Which framework does FaceTime Attention Correction use?"
    text = follow_up("Which iPhones get it?", [LEMONS, FACETIME, DOCKER], earlier)
    assert text.splitlines()[2:] == [
        "- The feature only appears to be working on the iPhone XS and XS Max for now. [4]"
    ]


def test_stop_words_alone_never_pick_a_sentence() -> None:
    assert answer("Which is it?", [LEMONS]) == f"{HEADER}\n\n{NOTHING}"
    # and a follow-up the sources cannot answer says so, from the page it is about
    earlier = "Which framework does FaceTime Attention Correction use?"
    assert follow_up("Does it cost money?", [LEMONS, FACETIME], earlier).endswith(NOTHING)
