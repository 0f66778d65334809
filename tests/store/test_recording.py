from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from htmlrag_chat.store.db import Store, StoreError
from htmlrag_chat.store.recording import export_jsonl, import_jsonl
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.conftest import PAGES

LATIN = "<html><body><p>Café à la crème</p></body></html>"


@pytest.fixture
def source(tmp_path: Path):
    """A cache with two searches: the fixture pages; a Latin-1 page and three without HTML."""
    with Store.open(tmp_path / "source.sqlite3") as store:
        first = [
            SearchResult(f"https://{p.name}.example/", p.name, f"about {p.name}") for p in PAGES
        ]
        store.put_search("fixture pages", first, region="de-de", backend="ddg")
        for page, result in zip(PAGES, first, strict=True):
            store.put_page(
                FetchResult(result.url, Outcome.OK, body=page.data, bytes=len(page.data))
            )
        second = [
            SearchResult("https://latin.example/", "Latin-1", "café"),
            SearchResult("https://failed.example/", "Failed"),
            SearchResult("https://challenge.example/", "Challenge"),
            SearchResult("https://never.example/", "Never fetched"),
        ]
        store.put_search("café", second)
        store.put_page(
            FetchResult(
                "https://latin.example/",
                Outcome.OK,
                charset="iso-8859-1",
                body=LATIN.encode("latin-1"),
            )
        )
        store.put_page(FetchResult("https://failed.example/", Outcome.FAILED, reason="timeout"))
        challenge = b"<html><body>Just a moment...</body></html>"  # a body, but not a source
        store.put_page(FetchResult("https://challenge.example/", Outcome.CHALLENGE, body=challenge))
        yield store


def test_export_writes_one_object_per_search(source, tmp_path):
    path = tmp_path / "recording.jsonl"
    assert export_jsonl(source, path) == 2
    first, second = (json.loads(line) for line in path.read_text("utf-8").splitlines())
    assert first["query"] == "fixture pages"
    assert [r["title"] for r in first["results"]] == [p.name for p in PAGES]
    assert all(isinstance(r["html"], str) and "<" in r["html"] for r in first["results"])
    assert second == {
        "query": "café",
        "results": [
            {"url": "https://latin.example/", "title": "Latin-1", "snippet": "café", "html": LATIN},
            {"url": "https://failed.example/", "title": "Failed", "snippet": "", "html": None},
            {
                "url": "https://challenge.example/",
                "title": "Challenge",
                "snippet": "",
                "html": None,
            },
            {
                "url": "https://never.example/",
                "title": "Never fetched",
                "snippet": "",
                "html": None,
            },
        ],
    }


def test_export_then_import_gives_the_same_searches_and_pages(source, tmp_path):
    path = tmp_path / "recording.jsonl"
    export_jsonl(source, path)
    recorded = {
        result["url"]: result["html"]
        for line in path.read_text("utf-8").splitlines()
        for result in json.loads(line)["results"]
    }
    with Store.open(tmp_path / "replay.sqlite3") as replay:
        assert import_jsonl(replay, path) == 2
        assert replay.get_search("fixture pages") == source.get_search(
            "fixture pages", region="de-de"
        )
        assert replay.get_search("café") == source.get_search("café")
        for url, html in recorded.items():
            page = replay.get_page(url)
            if html is None:
                assert page is None
                continue
            assert page.body == html.encode("utf-8")
            assert (page.outcome, page.status, page.charset, page.bytes) == (
                Outcome.OK,
                200,
                "utf-8",
                len(page.body),
            )
            assert page.content_type == "text/html; charset=utf-8" and page.fetched_at > 0
        for fixture in PAGES:  # UTF-8 pages come back byte for byte; a BOM is dropped
            body = replay.get_page(f"https://{fixture.name}.example/").body
            assert body == fixture.data.removeprefix(codecs.BOM_UTF8)
        assert replay.get_page("https://latin.example/").body == LATIN.encode("utf-8")

        # A second export of the replayed cache is the same recording.
        again = tmp_path / "again.jsonl"
        assert export_jsonl(replay, again) == 2
        assert again.read_bytes() == path.read_bytes()


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


GOOD = json.dumps({"query": "q", "results": [{"url": "https://a/", "html": "<p>a</p>"}]})
OTHER = json.dumps({"query": "q2", "results": [{"url": "https://b/", "title": "B"}]})


@pytest.mark.parametrize(
    "bad",
    [
        '{"query": "q", "results": [',
        "[1, 2]",
        '{"query": "q"}',
        '{"query": 3, "results": []}',
        '{"query": "q", "results": [{"title": "no url"}]}',
        '{"query": "q", "results": [{"url": "https://c/", "html": 5}]}',
        '{"query": "q", "results": [{"url": "https://c/", "html": "\\ud800"}]}',
    ],
    ids=[
        "truncated",
        "array",
        "no-results",
        "query-not-text",
        "no-url",
        "html-not-text",
        "surrogate",
    ],
)
def test_a_malformed_line_names_file_and_line_and_imports_nothing(tmp_path, bad):
    path = write_lines(tmp_path / "recording.jsonl", GOOD, "", OTHER, bad, GOOD)
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(StoreError) as caught:
            import_jsonl(store, path)
        assert f"{path}, line 4" in str(caught.value)
        assert store.get_search("q") is None and store.get_page("https://a/") is None
        assert store.stats() | {"bytes": 0} == dict.fromkeys(store.stats(), 0)


def test_import_skips_blank_lines_and_replaces_earlier_records(tmp_path):
    newer = json.dumps({"query": "q", "results": [{"url": "https://a/", "html": "<p>new</p>"}]})
    path = write_lines(tmp_path / "recording.jsonl", "", GOOD, "  ", OTHER, newer, "")
    with Store.open(tmp_path / "cache.sqlite3") as store:
        assert import_jsonl(store, path) == 3
        assert store.get_search("q") == [SearchResult("https://a/")]
        assert store.get_search("q2") == [SearchResult("https://b/", "B")]
        assert store.get_page("https://a/").body == b"<p>new</p>"
        assert store.get_page("https://b/") is None


def test_missing_files_are_store_errors(tmp_path):
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(StoreError, match="cannot read"):
            import_jsonl(store, tmp_path / "missing.jsonl")
        with pytest.raises(StoreError, match="cannot write"):
            export_jsonl(store, tmp_path / "no" / "such" / "folder.jsonl")
