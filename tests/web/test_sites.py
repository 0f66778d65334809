"""``--site`` and ``--exclude-site`` compare hosts as hosts, however a URL or a user spells
them: case, a trailing dot, an internationalised name as Unicode or as its ``xn--`` form."""

from __future__ import annotations

import asyncio

import pytest

from htmlrag_chat.settings.tree import find
from htmlrag_chat.web.search import WebSearcher
from htmlrag_chat.web.settings import SearchSettings
from htmlrag_chat.web.sites import allowed
from tests.loopback import serve_app
from tests.search_apis import SearchApis

SPELLINGS = [
    "https://EVIL.example./a",
    "https://evil.example/b",
    "https://www.Evil.Example../c",
    "https://xn--bcher-kva.de/d",
    "https://bücher.de/e",
    "https://BÜCHER.DE./f",
    "https://news.xn--bcher-kva.de/g",
    "https://other.net/h",
]


def sites(option: str, *texts: str) -> SearchSettings:
    """Settings with ``--site`` or ``--exclude-site`` read as the option reads them."""
    kind = find(option).kind
    return SearchSettings(**{option: tuple(v for text in texts for v in kind.parse(text))})


@pytest.mark.parametrize("spelled", ["EVIL.example.", "evil.example", "https://Evil.Example./"])
def test_an_excluded_site_is_excluded_however_either_side_spells_it(spelled):
    settings = sites("exclude_site", spelled, "xn--bcher-kva.de")
    kept = [url for url in SPELLINGS if allowed(url, settings)]
    assert kept == ["https://other.net/h"]


@pytest.mark.parametrize("spelled", ["bücher.de", "xn--bcher-kva.de", "BÜCHER.de."])
def test_a_site_of_an_internationalised_name_keeps_both_spellings_of_it(spelled):
    settings = sites("site", spelled)
    kept = [url for url in SPELLINGS if allowed(url, settings)]
    assert kept == SPELLINGS[3:7]


def test_a_searxng_result_on_an_excluded_site_is_dropped_whatever_its_spelling():
    apis = SearchApis([(url, "t", "s") for url in SPELLINGS])

    async def scenario() -> list[str]:
        async with serve_app(apis.app()) as port:
            settings = sites("exclude_site", "evil.example", "bücher.de")
            searcher = WebSearcher(
                SearchSettings(
                    backends=("searxng",),
                    searxng_url=f"http://127.0.0.1:{port}",
                    exclude_site=settings.exclude_site,
                )
            )
            return [result.url for result in await searcher.search("q")]

    assert asyncio.run(scenario()) == ["https://other.net/h"]


def test_a_site_that_is_no_host_name_is_refused():
    kind = find("site").kind
    for text in ("exa mple.org", "a..b\u202e", "\u202eevil.example", "xn--.de\u00ad"):
        with pytest.raises(ValueError):
            kind.parse(text)
