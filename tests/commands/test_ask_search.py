"""``ask`` with a SearXNG instance end to end: the real CLI, a loopback SearXNG speaking its
JSON API, a loopback OpenAI-compatible reader, and the pages served from a recording
imported into the cache."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from tests.loopback import ThreadedApp
from tests.openai_server import ScriptedLLM, ThreadedLLM
from tests.search_apis import SearchApis

QUESTION = "Who designed the Eiffel tower?"
ON_SITE = "https://example.org/eiffel"
OFF_SITE = ["https://other.net/eiffel", "https://never.invalid/eiffel"]
PAGE = (
    "<html><head><title>{title}</title>"
    '<meta property="article:published_time" content="2024-03-05T10:00:00Z"></head>'
    "<body><article>" + "<p>{text}</p>" * 8 + "</article></body></html>"
)


def reply(messages: list[dict]) -> str:
    prompt = messages[-1]["content"]
    if "New message:" in prompt:
        return f"SEARCH: {QUESTION}"
    if "Do the sources above contain" in prompt:
        return "ENOUGH"
    return "Gustave Eiffel's company designed it [1]."


@pytest.fixture
def cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A cache holding the pages of two sites (imported under a query nobody asks), so the
    searches go to SearXNG and the pages come from the recording; ``never.invalid`` is in
    neither, so using it would mean downloading it."""
    pages = [
        (ON_SITE, "Eiffel on example.org", "Gustave Eiffel's company designed the tower."),
        (OFF_SITE[0], "Eiffel on other.net", "The tower was designed by Koechlin and Nouguier."),
    ]
    item = {
        "query": "pages only",
        "results": [
            {"url": url, "title": title, "snippet": "", "html": PAGE.format(title=title, text=text)}
            for url, title, text in pages
        ],
    }
    recording = tmp_path / "pages.jsonl"
    recording.write_text(json.dumps(item) + "\n", encoding="utf-8")
    path = tmp_path / "cache.sqlite3"
    assert main(["--cache", str(path), "cache", "import", "--jsonl", str(recording)]) == 0
    capsys.readouterr()
    return path


def test_ask_searches_searxng_keeps_to_the_site_and_gives_the_reader_the_dates(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    apis = SearchApis([(ON_SITE, "E", ""), (OFF_SITE[0], "O", ""), (OFF_SITE[1], "N", "")])
    llm = ScriptedLLM(reply=reply)
    with ThreadedApp(apis.app()) as port, ThreadedLLM(llm) as url:
        argv = [
            "--cache", str(cache), "ask", QUESTION, "--json", "--pruner", "bm25",
            "--reader", "openai", "--base-url", url, "--model", "m", "--rounds", "1",
            "--backends", "searxng", "--searxng-url", f"http://127.0.0.1:{port}",
            "--site", "example.org",
        ]  # fmt: skip
        assert main(argv) == 0
    record = json.loads(capsys.readouterr().out)
    (sent,) = apis.sent("searxng")
    assert sent.params["format"] == "json" and sent.params["q"] == f"{QUESTION} site:example.org"
    assert [(s["url"], s["date"]) for s in record["sources"]] == [(ON_SITE, "2024-03-05")]
    with Store.open(cache, readonly=True) as store:
        assert [store.get_page(u) for u in OFF_SITE] == [store.get_page(OFF_SITE[0]), None]
        stored = store.get_search(QUESTION, region=None, safesearch=None)
    assert [r.url for r in stored] == [ON_SITE]  # the other sites never reached a download

    today = dt.date.today().isoformat()
    rewrite, read = llm.requests[0]["messages"], llm.requests[-1]["messages"]
    assert f"Today's date is {today}" in rewrite[0]["content"]  # the system text of every call
    assert f"Today's date is {today}" in read[0]["content"]
    assert f"URL: {ON_SITE}\nPublished: 2024-03-05\n" in read[-1]["content"]
    assert "other.net" not in read[-1]["content"]


def test_without_the_site_filter_the_other_site_is_cited_too(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The control for the test above: the same search without ``--site`` reads both
    recorded pages; each source is listed with its date."""
    apis = SearchApis([(ON_SITE, "E", ""), (OFF_SITE[0], "O", "")])
    with ThreadedApp(apis.app()) as port:
        argv = [
            "--cache", str(cache), "ask", QUESTION, "--pruner", "bm25",
            "--reader", "extractive", "--backends", "searxng",
            "--searxng-url", f"http://127.0.0.1:{port}",
        ]  # fmt: skip
        assert main(argv) == 0
    listed = capsys.readouterr().out.split("Sources:\n")[1].splitlines()
    assert sorted(line.split(" - ")[1] for line in listed if line.startswith("[")) == [
        f"{ON_SITE} (2024-03-05)",
        f"{OFF_SITE[0]} (2024-03-05)",
    ]
