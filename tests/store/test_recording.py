from __future__ import annotations

import codecs
import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from htmlrag_chat.base.errors import EXIT_INPUT, EXIT_USAGE, InputError, UserError
from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.limits import MAX_PAGE_BYTES
from htmlrag_chat.html.text import visible_text
from htmlrag_chat.store.db import Store, StoreError
from htmlrag_chat.store.recording import MAX_LINE_BYTES, export_jsonl, import_jsonl
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
        with pytest.raises(InputError) as caught:  # the file's fault, not the cache's
            import_jsonl(store, path)
        assert f"{path}, line 4" in str(caught.value) and caught.value.exit_code == EXIT_INPUT
        assert store.get_search("q") is None and store.get_page("https://a/") is None
        assert store.stats() | {"bytes": 0} == dict.fromkeys(store.stats(), 0)


def test_a_line_nested_too_deeply_is_an_input_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    path = write_lines(tmp_path / "recording.jsonl", GOOD, deep)
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(InputError, match=f"{path}, line 2: JSON nested too deeply"):
            import_jsonl(store, path)
        assert store.get_search("q") is None


def test_a_damaged_cache_is_refused_before_anything_is_imported(tmp_path):
    cache = tmp_path / "cache.sqlite3"
    with Store.open(cache) as store:
        store.put_many("m", {f"k{n}": np.full(384, n, dtype=np.float32) for n in range(300)})
        store.vacuum()
    data = bytearray(cache.read_bytes())
    data[26 * 4096 : 26 * 4096 + 100] = b"\xff" * 100  # a page of the embeddings table only
    cache.write_bytes(data)
    with Store.open(cache) as store:
        assert store.get_search("q") is None  # the tables an import writes still read fine
        with pytest.raises(StoreError, match="damaged") as caught:
            import_jsonl(store, write_lines(tmp_path / "recording.jsonl", GOOD))
        assert "\n" not in str(caught.value)
    assert cache.read_bytes() == data  # nothing was written


def test_import_skips_blank_lines_and_replaces_earlier_records(tmp_path):
    newer = json.dumps({"query": "q", "results": [{"url": "https://a/", "html": "<p>new</p>"}]})
    path = write_lines(tmp_path / "recording.jsonl", "", GOOD, "  ", OTHER, newer, "")
    with Store.open(tmp_path / "cache.sqlite3") as store:
        assert import_jsonl(store, path) == 3
        assert store.get_search("q") == [SearchResult("https://a/")]
        assert store.get_search("q2") == [SearchResult("https://b/", "B")]
        assert store.get_page("https://a/").body == b"<p>new</p>"
        assert store.get_page("https://b/") is None


def test_a_missing_recording_is_an_input_error_and_an_unwritable_one_a_usage_error(tmp_path):
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(InputError, match="cannot read"):
            import_jsonl(store, tmp_path / "missing.jsonl")
        with pytest.raises(UserError, match="cannot write") as caught:
            export_jsonl(store, tmp_path / "no" / "such" / "folder.jsonl")
        assert caught.value.exit_code == EXIT_USAGE


def test_a_gz_path_is_gzip_both_ways_and_the_same_recording(source, tmp_path):
    plain, packed = tmp_path / "recording.jsonl", tmp_path / "recording.jsonl.gz"
    assert export_jsonl(source, plain) == export_jsonl(source, packed) == 2
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    with Store.open(tmp_path / "replay.sqlite3") as replay:
        assert import_jsonl(replay, packed) == 2
        assert replay.get_search("café") == source.get_search("café")
        assert replay.get_page("https://latin.example/").body == LATIN.encode("utf-8")
        again = tmp_path / "again" / "recording.jsonl.gz"
        again.parent.mkdir()
        export_jsonl(replay, again)  # no timestamp in the header: the same bytes
        assert again.read_bytes() == packed.read_bytes()


def _records(count: int) -> bytes:
    """Distinct records: damage near the end is found after many have been read."""
    return "".join(
        json.dumps(
            {
                "query": f"q{n}",
                "results": [
                    {
                        "url": f"https://{n}.example/",
                        "html": hashlib.sha256(str(n).encode()).hexdigest() * 20,
                    }
                ],
            }
        )
        + "\n"
        for n in range(count)
    ).encode()


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: _records(3),  # plain text under a .gz name
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data[:-8] + bytes(4) + data[-4:],  # wrong CRC, found after the last line
        lambda data: data[:200] + bytes(64) + data[264:],  # corrupt deflate blocks
    ],
    ids=["not-gzip", "truncated", "crc", "corrupt-block"],
)
def test_damaged_gzip_is_one_input_error_and_leaves_the_cache_as_it_was(tmp_path, damage):
    path = tmp_path / "recording.jsonl.gz"
    path.write_bytes(damage(gzip.compress(_records(200))))
    with Store.open(tmp_path / "cache.sqlite3") as store:
        import_jsonl(store, write_lines(tmp_path / "before.jsonl", GOOD))
        before = store.stats()
        with pytest.raises(InputError) as caught:
            import_jsonl(store, path)
        message = str(caught.value)
        assert message.startswith(f"cannot read {path}: not valid gzip data (")
        assert "\n" not in message
        assert store.stats() == before and store.get_search("q0") is None
        assert store.get_search("q") == [SearchResult("https://a/")]


DEMO = Path(__file__).resolve().parents[2] / "demo"


def test_the_bundled_demo_recording_replays_its_question_with_an_answer(tmp_path):
    question = json.loads((DEMO / "question.json").read_text("utf-8"))
    with Store.open(tmp_path / "cache.sqlite3") as store:
        assert import_jsonl(store, DEMO / "recording.jsonl.gz") == 1
        assert [query for query, _ in store.searches()] == [question["question"]]
        results = store.get_search(question["question"])
        assert len(results) == 6 and results[0].url != question["gold_url"]
        pages = {result.url: store.get_page(result.url) for result in results}
        assert all(page is not None and page.outcome is Outcome.OK for page in pages.values())
        gold = visible_text(clean_html(pages[question["gold_url"]].body))
        assert any(answer in gold for answer in question["answers"])


def test_a_page_over_the_cap_is_imported_as_skipped_like_a_download(tmp_path):
    huge = "<html><body><p>" + "word " * (MAX_PAGE_BYTES // 5) + "</p></body></html>"
    record = {"query": "q", "results": [{"url": "https://huge/", "html": huge},
                                        {"url": "https://a/", "html": "<p>a</p>"}]}  # fmt: skip
    path = write_lines(tmp_path / "recording.jsonl", json.dumps(record))
    with Store.open(tmp_path / "cache.sqlite3") as store:
        assert import_jsonl(store, path) == 1
        page = store.get_page("https://huge/")
        assert page.outcome is Outcome.SKIPPED and page.reason == "larger than 5 MiB"
        assert page.body is None and page.bytes == len(huge)
        assert store.get_page("https://a/").body == b"<p>a</p>"


def test_a_line_longer_than_the_cap_is_refused_without_reading_it_all(tmp_path):
    """A small gzip file can hold a line of gigabytes; reading stops past MAX_LINE_BYTES."""
    path = tmp_path / "bomb.jsonl.gz"
    block = b" " * 2**20
    with gzip.GzipFile(path, "wb", compresslevel=1, mtime=0) as out:
        out.write(GOOD.encode() + b"\n" + b'{"query": "q2", "results": [], "pad": "')
        for _ in range(MAX_LINE_BYTES // len(block) + 1):
            out.write(block)
        out.write(b'"}\n')
    assert path.stat().st_size < MAX_LINE_BYTES // 100
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(InputError, match=f"{path}, line 2: longer than 160 MiB"):
            import_jsonl(store, path)
        assert store.get_search("q") is None  # all or nothing


def test_millions_of_blank_lines_are_refused_at_the_line_cap_at_once(tmp_path):
    """A 50 KB gzip of 50 Mi blank lines once took a minute; the line cap stops it after a
    million, read a block at a time."""
    path = tmp_path / "blank.jsonl.gz"
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        out.write(GOOD.encode() + b"\n")
        for _ in range(50):
            out.write(b"\n" * 2**20)
    assert path.stat().st_size < 100_000
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(InputError, match="more than 1,000,000 lines"):
            import_jsonl(store, path)
        assert store.get_search("q") is None  # all or nothing


def test_blank_lines_under_the_cap_cost_nothing_and_lines_keep_their_numbers(tmp_path):
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n \r\n\t\n" * 300_000 + b"not json\n")
    with (
        Store.open(tmp_path / "cache.sqlite3") as store,
        pytest.raises(InputError, match=f"{path}, line 900001: not JSON"),
    ):
        import_jsonl(store, path)


def test_the_decompressed_size_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr("htmlrag_chat.store.recording.MAX_IMPORT_BYTES", 2**20)
    path = tmp_path / "big.jsonl.gz"
    padded = json.dumps({"query": "q", "results": [], "pad": " " * 500_000}) + "\n"
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        out.write(padded.encode() * 3)
    with Store.open(tmp_path / "cache.sqlite3") as store:
        with pytest.raises(InputError, match="more than 1 MiB of text"):
            import_jsonl(store, path)
        assert store.get_search("q") is None
