"""``search``, ``fetch`` and ``cache`` end to end: real CLI, real SQLite file, loopback HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from aiohttp import web

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.search_apis import SearchApis, searxng_config

PAGE = "<html><head><title>T</title></head><body>" + "<p>Real words on a page.</p>" * 20


class LoopbackSite:
    """An aiohttp server on 127.0.0.1 in a thread, so the CLI can run its own event loop."""

    def __init__(self, pages: dict[str, tuple[bytes, str]] | None = None) -> None:
        self.pages = pages or {}  # name -> (body, Content-Type header), served as they are
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.hits: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        async def page(request: web.Request) -> web.Response:
            self.hits.append(request.path)
            if request.path[1:] in self.pages:
                body, content_type = self.pages[request.path[1:]]
                return web.Response(body=body, headers={"Content-Type": content_type})
            if request.path == "/doc.pdf":
                return web.Response(body=b"%PDF-1.4", content_type="application/pdf")
            return web.Response(text=PAGE, content_type="text/html")

        async def start() -> None:
            app = web.Application()
            app.router.add_get("/{name}", page)
            self.runner = web.AppRunner(app)
            await self.runner.setup()
            await web.TCPSite(self.runner, "127.0.0.1", 0).start()
            self.port = self.runner.addresses[0][1]
            self.ready.set()

        self.loop.run_until_complete(start())
        self.loop.run_forever()

    def __enter__(self) -> LoopbackSite:
        self.thread.start()
        self.ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"


def run(capsys, *argv: str) -> tuple[int, list[dict], str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines() if line.strip()], err


def test_fetch_records_then_replays_and_explains_skips(capsys, tmp_path):
    cache = str(tmp_path / "c.sqlite3")
    with LoopbackSite() as site:
        urls = [site.url("a"), site.url("doc.pdf")]
        code, lines, _ = run(capsys, "--cache", cache, "fetch", "--allow-private", *urls)
        assert code == 6  # partly: one page ok, one skipped
        assert [line["outcome"] for line in lines] == ["ok", "skipped"]
        assert "application/pdf" in lines[1]["reason"]
        hits = len(site.hits)
        code, lines, _ = run(capsys, "fetch", "--replay", "--cache", cache, *urls)
        assert len(site.hits) == hits  # replay asked the server nothing
        assert code == 6 and all(line["from_cache"] for line in lines)
        code, lines, _ = run(capsys, "fetch", f"--replay={cache}", urls[0], urls[0])
        assert len(site.hits) == hits
    assert code == 0 and [line["outcome"] for line in lines] == ["ok", "ok"]  # all cached ok


def test_fetch_refuses_private_addresses_by_default(capsys, tmp_path):
    with LoopbackSite() as site:
        code, lines, err = run(capsys, "fetch", "--cache", str(tmp_path / "c"), site.url("a"))
        assert site.hits == []
    assert code == 3 and lines[0]["outcome"] == "blocked"  # none came back ok
    assert f"htmlrag-chat: {site.url('a')}: {lines[0]['reason']}\n" in err  # and why, on stderr


def test_replay_names_the_missing_url_and_query(capsys, tmp_path):
    cache = tmp_path / "c.sqlite3"
    Store.open(cache).close()
    code, lines, err = run(capsys, "--replay-db", str(cache), "fetch", "https://example.org/x")
    assert code == 3 and lines[0]["reason"] == "not in the recording"
    assert "https://example.org/x: not in the recording" in err
    code, _, err = run(capsys, "--cache", str(cache), "--replay", "search", "what is htmlrag")
    assert code == 2 and "'what is htmlrag'" in err and err.count("\n") == 1


def test_a_failed_search_is_one_line_with_advice(capsys, tmp_path, monkeypatch):
    apis = SearchApis(status={"searxng": 503})
    with searxng_config(monkeypatch, tmp_path, apis):
        code, _, err = run(capsys, "--cache", str(tmp_path / "c"), "search", "htmlrag")
    assert code == 5 and err.count("\n") == 1 and "--replay" in err and "Traceback" not in err
    assert "searxng answered HTTP 503" in err and len(apis.requests) == 1


def test_search_takes_the_backends_in_order_and_says_when_it_switches(
    capsys, tmp_path, monkeypatch
):
    """The config names SearXNG; ``--backends`` puts Tavily (no key set) first, so the
    switch is one line and SearXNG's results are printed."""
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    apis = SearchApis([("https://example.org/a", "A", "")])
    with searxng_config(monkeypatch, tmp_path, apis):
        argv = ["--cache", str(tmp_path / "c"), "search", "q", "--backends", "tavily,searxng"]
        code, lines, err = run(capsys, *argv)
    assert code == 0 and [line["url"] for line in lines] == ["https://example.org/a"]
    assert err == "htmlrag-chat: note: search: TAVILY_API_KEY is not set; trying searxng\n"


def test_imported_recording_replays_byte_identical(capsys, tmp_path):
    html = "<html><body><p>Grüße aus der Aufnahme, 東京.</p></body></html>"
    recording = tmp_path / "rec.jsonl"
    item = {
        "query": "q",
        "results": [{"url": "https://x.example/", "title": "X", "snippet": "", "html": html}],
    }
    recording.write_text(json.dumps(item, ensure_ascii=False) + "\n", encoding="utf-8")
    cache = str(tmp_path / "c.sqlite3")
    assert run(capsys, "--cache", cache, "cache", "import", "--jsonl", str(recording))[1] == [
        {"imported": 1}
    ]
    code, lines, _ = run(capsys, "search", "q", "--replay-db", cache)
    assert code == 0 and lines[0]["url"] == "https://x.example/"
    with Store.open(cache, readonly=True) as store:
        assert store.get_page("https://x.example/").body == html.encode("utf-8")
    exported = tmp_path / "out.jsonl"
    run(capsys, "--cache", cache, "cache", "export", "--jsonl", str(exported))
    assert json.loads(exported.read_text(encoding="utf-8")) == item


def test_cache_stats_clear_and_vacuum(capsys, tmp_path):
    cache = str(tmp_path / "c.sqlite3")
    with Store.open(cache) as store:
        store.put_search("q", [])
        store.new_conversation("kept")
    code, (stats,), _ = run(capsys, "cache", "stats", "--cache", cache)
    assert code == 0 and stats["searches"] == 1 and stats["path"] == cache
    assert run(capsys, "--cache", cache, "cache", "clear")[0] == 0
    assert run(capsys, "--cache", cache, "cache", "vacuum")[0] == 0
    (stats,) = run(capsys, "--cache", cache, "cache", "stats")[1]
    assert stats["searches"] == 0 and stats["conversations"] == 1


@pytest.mark.parametrize(
    "content", [b"not a database at all " * 100, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_a_corrupt_cache_is_one_line_and_left_alone(capsys, tmp_path, content):
    cache = tmp_path / "c.sqlite3"
    cache.write_bytes(content)
    code, _, err = run(capsys, "--cache", str(cache), "cache", "stats")
    assert code == 4 and str(cache) in err and err.count("\n") == 1 and "Traceback" not in err
    assert cache.read_bytes() == content


def test_export_import_need_a_file(capsys, tmp_path):
    code, _, err = run(capsys, "--cache", str(tmp_path / "c"), "cache", "export")
    assert code == 2 and "--jsonl" in err


def test_default_cache_follows_the_environment(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("HTMLRAG_CHAT_CACHE", str(tmp_path / "env.sqlite3"))
    (stats,) = run(capsys, "cache", "stats")[1]
    assert Path(stats["path"]) == tmp_path / "env.sqlite3"


def test_a_searxng_json_response_imports_as_a_search(capsys, tmp_path):
    response = {
        "query": "eiffel tower",
        "number_of_results": 2,
        "results": [
            {"url": "https://example.org/a", "title": "A \x1b[2J", "content": "about",
             "engine": "duckduckgo", "score": 1.0},
            {"title": "no url"},
            {"url": "https://example.org/b", "title": "B", "engine": "bing", "score": 0.5},
        ],
        "answers": [], "suggestions": [], "unresponsive_engines": [],
    }  # fmt: skip
    file = tmp_path / "searxng.json"
    file.write_text(json.dumps(response), encoding="utf-8")
    cache = str(tmp_path / "c.sqlite3")
    code, lines, _ = run(capsys, "--cache", cache, "cache", "import", "--searxng", str(file))
    assert code == 0 and lines == [{"imported": 1}]
    code, lines, _ = run(capsys, "search", "eiffel tower", "--replay-db", cache)
    assert code == 0 and lines == [
        {"url": "https://example.org/a", "title": "A [2J", "snippet": "about"},
        {"url": "https://example.org/b", "title": "B", "snippet": ""},
    ]
    file.write_text('{"results": "none"}', encoding="utf-8")
    code, _, err = run(capsys, "--cache", cache, "cache", "import", "--searxng", str(file))
    assert code == 3 and err.count("\n") == 1 and "expected SearXNG's JSON" in err
    code, _, err = run(capsys, "--cache", cache, "cache", "export", "--searxng", str(file))
    assert code == 2 and "goes with cache import" in err


def test_max_results_cuts_recorded_results_too(capsys, tmp_path):
    """A search recorded with six results gives two under ``--max-results 2``, in replay as
    in record mode (where the recording is reused), the first two in their order."""
    html = "<html><body><p>words</p></body></html>"
    results = [{"url": f"https://{n}.example/", "title": str(n), "html": html} for n in range(6)]
    recording = tmp_path / "rec.jsonl"
    recording.write_text(json.dumps({"query": "q", "results": results}) + "\n", encoding="utf-8")
    cache = str(tmp_path / "c.sqlite3")
    run(capsys, "--cache", cache, "cache", "import", "--jsonl", str(recording))
    for mode in (["--replay-db", cache], ["--cache", cache]):
        code, lines, _ = run(capsys, "search", "q", "--max-results", "2", *mode)
        assert code == 0 and [line["url"] for line in lines] == [
            "https://0.example/", "https://1.example/",
        ]  # fmt: skip
    code, lines, _ = run(capsys, "search", "q", "--replay-db", cache)
    assert code == 0 and len(lines) == 6  # the default, 8, holds them all


# -- charsets a server may name (issue 21)

WORDS = "<p>Paris is the capital and the largest city of France.</p>"
LONG = f"<html><head><title>Paris</title></head><body>{WORDS * 20}</body></html>".encode()
SHORT = f"<html><body>{WORDS} +ADw-script+AD4- \\ud800</body></html>".encode()
BOGUS = ["rot13", "base64", "utf-7", "utf-32", "utf-16le", "cp037", "undefined", "idna"]


def test_pages_served_with_charsets_no_browser_honours_are_fetched_used_and_exported(
    capsys, tmp_path
):
    """Once a crash of the whole fetch (rot13 and the like) or a page called "likely
    JavaScript-only" (utf-16le on ASCII): the label is ignored, as a browser ignores it."""
    pages = {
        f"{size}-{label}": (body, f"text/html; charset={label}")
        for label in BOGUS
        for size, body in (("long", LONG), ("short", SHORT))
    }
    pages["short-none"] = (SHORT, "text/html")
    cache = tmp_path / "c.sqlite3"
    with LoopbackSite(pages) as site:
        urls = [site.url(name) for name in pages]
        code, lines, err = run(capsys, "--cache", str(cache), "fetch", "--allow-private", *urls)
    assert code == 6 and "Traceback" not in err  # some ok, the short ones too short to read
    outcomes = {line["url"].rsplit("/", 1)[1]: line["outcome"] for line in lines}
    for label in BOGUS:  # a short page is judged as it is without the label
        assert (outcomes[f"long-{label}"], outcomes[f"short-{label}"]) == (
            "ok",
            outcomes["short-none"],
        )
    urls = [url for url in urls if "/long-" in url]
    with Store.open(cache) as store:
        store.put_search("capital of france", [SearchResult(url, "Paris") for url in urls])
    argv = ["ask", "capital of france", "--reader", "extractive", "--pruner", "bm25",
            "--tokenizer", "approx", "--pages", str(len(urls))]  # fmt: skip
    code = main(["--replay-db", str(cache), *argv])
    out, err = capsys.readouterr()
    assert code == 0 and "Paris is the capital" in out and "page not used" not in err
    exported = tmp_path / "out.jsonl"
    code, _, _ = run(capsys, "--cache", str(cache), "cache", "export", "--jsonl", str(exported))
    (record,) = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    assert code == 0 and all("Paris is the capital" in r["html"] for r in record["results"])


def test_a_page_stored_with_a_bogus_charset_by_an_older_version_still_decodes(capsys, tmp_path):
    cache = tmp_path / "c.sqlite3"
    url = "https://old.example/"
    with Store.open(cache) as store:
        store.put_search("capital of france", [SearchResult(url, "Paris")])
        store.put_page(FetchResult(url, Outcome.OK, status=200, charset="rot13", body=LONG))
    argv = ["ask", "capital of france", "--reader", "extractive", "--pruner", "bm25"]
    code = main(["--replay-db", str(cache), *argv])
    out, err = capsys.readouterr()
    assert code == 0 and "Paris is the capital" in out and "Traceback" not in err
    exported = tmp_path / "out.jsonl"
    assert run(capsys, "--cache", str(cache), "cache", "export", "--jsonl", str(exported))[0] == 0
    assert "Paris is the capital" in exported.read_text(encoding="utf-8")


def test_a_cache_damaged_in_many_places_is_still_one_line(capsys, tmp_path):
    """SQLite reports such a file in one row of a hundred lines: the first is enough."""
    cache = tmp_path / "c.sqlite3"
    with Store.open(cache) as store:
        store.put_many("m", {f"k{n}": np.full(384, n, dtype=np.float32) for n in range(300)})
        store.vacuum()
    data = bytearray(cache.read_bytes())
    for page in range(3, len(data) // 4096, 2):
        data[page * 4096 + 8 : page * 4096 + 40] = b"\x07" * 32
    cache.write_bytes(data)
    code, _, err = run(capsys, "--cache", str(cache), "cache", "stats")
    assert code == 4 and err.count("\n") == 1 and "more problems" in err
    assert cache.read_bytes() == data


# -- what search APIs send back (issue 31)


def test_json_nested_too_deeply_is_one_line_from_searxng_and_from_a_file(
    capsys, tmp_path, monkeypatch
):
    deep = "[" * 100_000 + "]" * 100_000
    file = tmp_path / "deep.json"
    file.write_text(deep, encoding="utf-8")
    cache = str(tmp_path / "c.sqlite3")
    code, _, err = run(capsys, "--cache", cache, "cache", "import", "--searxng", str(file))
    assert code == 3 and err.count("\n") == 1 and "JSON nested too deeply" in err
    file.write_text('{"query": "q", "results": []}\n' + deep + "\n", encoding="utf-8")
    code, _, err = run(capsys, "--cache", cache, "cache", "import", "--searxng", str(file))
    assert code == 3 and err.count("\n") == 1 and "line 2: JSON nested too deeply" in err

    class Deep(SearchApis):
        async def _searxng(self, request: web.Request) -> web.Response:
            return web.Response(text=deep, content_type="application/json")

    with searxng_config(monkeypatch, tmp_path, Deep()):
        code, _, err = run(capsys, "--cache", cache, "search", "q")
    assert code == 5 and err.count("\n") == 1 and "searxng answered JSON nested too deeply" in err


def test_search_lists_no_address_that_is_not_a_web_page_live_or_imported(
    capsys, tmp_path, monkeypatch
):
    junk = ["javascript:alert(1)", "file:///etc/passwd", "data:text/html,x", "not a url"]
    listed = [(url, "junk", "") for url in junk] + [("https://example.org/a", "A", "")]
    cache = str(tmp_path / "c.sqlite3")
    with searxng_config(monkeypatch, tmp_path, SearchApis(listed)):
        code, lines, _ = run(capsys, "--cache", cache, "search", "live")
    assert code == 0 and [line["url"] for line in lines] == ["https://example.org/a"]
    response = {"query": "imported", "results": [{"url": url} for url, _, _ in listed]}
    file = tmp_path / "searxng.json"
    file.write_text(json.dumps(response), encoding="utf-8")
    run(capsys, "--cache", cache, "cache", "import", "--searxng", str(file))
    code, lines, _ = run(capsys, "search", "imported", "--replay-db", cache)
    assert code == 0 and [line["url"] for line in lines] == ["https://example.org/a"]


def test_max_results_holds_for_live_searxng_results_and_what_is_stored(
    capsys, tmp_path, monkeypatch
):
    many = [(f"https://example.org/{n}", str(n), "") for n in range(40)]
    cache = tmp_path / "c.sqlite3"
    with searxng_config(monkeypatch, tmp_path, SearchApis(many)):
        code, lines, _ = run(capsys, "--cache", str(cache), "search", "q", "--max-results", "3")
    assert code == 0 and [line["url"] for line in lines] == [url for url, _, _ in many[:3]]
    with Store.open(cache, readonly=True) as store:
        (row,) = store._rows("SELECT results FROM searches")
    assert len(json.loads(row["results"])) == 3


def test_a_dead_socks_proxy_is_one_line_naming_it(capsys, tmp_path, monkeypatch):
    from tests.loopback import unused_port

    dead = f"socks5://127.0.0.1:{unused_port()}"
    with searxng_config(monkeypatch, tmp_path, SearchApis([("https://example.org/a", "", "")])):
        argv = ["--cache", str(tmp_path / "c"), "search", "q", "--proxy", dead]
        code, _, err = run(capsys, *argv)
    assert code == 5 and err.count("\n") == 1 and f"the proxy {dead} cannot be reached" in err


def test_half_a_utf16_pair_in_a_searxng_result_is_replaced_and_the_search_kept(
    capsys, tmp_path, monkeypatch
):
    """A lone ``"\\ud83d"`` in a title or snippet once ended ``search`` (and ``ask``) when the
    results were stored; ``cache import`` refused the same text cleanly."""
    apis = SearchApis([("https://example.org/a", "Otters \ud83d", "Kelp \ude00 and 😀")])
    cache = str(tmp_path / "c")
    with searxng_config(monkeypatch, tmp_path, apis):
        code, lines, err = run(capsys, "--cache", cache, "search", "otters")
    assert code == 0, err
    assert lines == [
        {"url": "https://example.org/a", "title": "Otters \ufffd", "snippet": "Kelp \ufffd and 😀"}
    ]
    code, again, _ = run(capsys, "--cache", cache, "search", "otters", "--replay")
    assert code == 0 and again == lines
