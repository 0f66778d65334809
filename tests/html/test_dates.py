"""A page's publication day from its metadata, in the order the module gives."""

from __future__ import annotations

import datetime as dt

import pytest

from htmlrag_chat.html.dates import page_date
from htmlrag_chat.pruning.pipeline import PageInput, clean_page

TOMORROW_BUT_ONE = (dt.date.today() + dt.timedelta(days=2)).isoformat()


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (
            '<meta property="article:published_time" content="2024-03-05T10:00:00+01:00">',
            "2024-03-05",
        ),
        ("<meta content='2023-01-31' name='pubdate'>", "2023-01-31"),
        ('<meta itemprop="datePublished" content="2022-12-01">', "2022-12-01"),
        (
            '<script type="application/ld+json">{"@type": "NewsArticle", '
            '"datePublished" : "2021-07-04T08:00:00Z"}</script>',
            "2021-07-04",
        ),
        ('<time datetime="2020-02-29">29 Feb</time><time datetime="2019-01-01">', "2020-02-29"),
        (
            '<time datetime="2019-01-01"></time>'
            '<meta property="article:published_time" content="2024-03-05">',
            "2024-03-05",  # the declaration beats a <time> in the text
        ),
        ('<meta property="article:published_time" content="yesterday">', ""),
        ('<meta property="article:published_time" content="2023-02-30">', ""),
        (f'<meta property="article:published_time" content="{TOMORROW_BUT_ONE}">', ""),
        ('<meta name="description" content="2024-03-05 was a day">', ""),
        ("<p>Published on 2024-03-05</p>", ""),  # dates in the text are not guessed at
    ],
)
def test_the_declared_day_is_found(head: str, expected: str) -> None:
    assert page_date(f"<html><head>{head}</head><body><p>x</p></body></html>".encode()) == expected


def test_a_cleaned_page_keeps_the_date_its_metadata_declared() -> None:
    html = (
        '<html><head><title>T</title><meta property="article:published_time" '
        'content="2024-03-05T10:00:00Z"></head><body><p>Words.</p></body></html>'
    )
    page, cleaned = clean_page(PageInput("https://example.org/", html.encode()))
    assert page.date == "2024-03-05" and cleaned.find(".//meta") is None
