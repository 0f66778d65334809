"""``--saved``: pages a browser saved, read as the pages they were saved from.

Real pages of the corpus saved the way browsers save them: Chrome's ``NAME.html`` with the
``saved from url=`` comment and its ``NAME_files/`` folder (a frame, a style sheet, an
image), Firefox's without the comment. ``ask --saved DIR --no-web`` answers from them with
every socket refused, and cites a page by the address it was saved from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from htmlrag_chat.base.events import Event, Notice
from htmlrag_chat.cli import main
from htmlrag_chat.sources.saved import SavedPages, saved_from
from tests.conftest import FIXTURES

DOCKER_URL = "https://docs.docker.com/engine/install/"
QUESTION = "Under which license is Docker Engine released?"
FRAME_CLAIM = "Docker Engine is released under the Frame Public License"


def chrome_saved(html: bytes, url: str) -> bytes:
    """A page as Chrome writes it: the comment with the address's length, then the page."""
    return f"<!-- saved from url=({len(url):04d}){url} -->\n".encode() + html


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "saved"
    resources = folder / "Install Docker Engine_files"
    resources.mkdir(parents=True)
    docker = (FIXTURES / "pages" / "docker-engine.html").read_bytes()
    (folder / "Install Docker Engine.html").write_bytes(chrome_saved(docker, DOCKER_URL))
    (resources / "frame.html").write_text(f"<html><body><p>{FRAME_CLAIM}.</p></body></html>")
    (resources / "main.css").write_text("body { color: black }")
    (resources / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    rsync = (FIXTURES / "pages" / "rsync-stunnel.html").read_bytes()
    (folder / "Rsync + Stunnel 4.x.html").write_bytes(rsync)  # as Firefox saves it
    return folder


def test_a_saved_page_answers_and_is_cited_by_the_address_it_was_saved_from(
    saved: Path, tmp_path: Path, no_network: None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["ask", QUESTION, "--saved", str(saved), "--no-web", "--reader", "extractive"]
    code = main([*argv, "--cache", str(tmp_path / "c.db"), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(captured.out)
    assert "Apache License" in record["answer"] and record["cited"]
    cited = {n for sentence in record["sentences"] for n in sentence["cited"]}
    by_number = {source["number"]: source for source in record["sources"]}
    assert {by_number[n]["url"] for n in cited} == {DOCKER_URL}
    assert not by_number[min(cited)]["local"]
    # The Firefox page is cited by its file; what the _files folder holds is no page.
    urls = {source["url"] for source in record["sources"]}
    assert urls <= {DOCKER_URL, (saved / "Rsync + Stunnel 4.x.html").as_uri()}
    assert FRAME_CLAIM not in captured.out
    assert "search" not in record["timings_ms"] and "saved" in record["timings_ms"]


def test_the_best_pages_for_each_query_are_taken_when_there_are_more(saved: Path) -> None:
    events: list[Event] = []
    pages = SavedPages.of([str(saved)]).find(["stunnel rsync certificates"], 1, events.append)
    assert [page.source for page in pages] == [(saved / "Rsync + Stunnel 4.x.html").as_uri()]
    [docker] = SavedPages.of([str(saved)]).find([QUESTION], 1, events.append)
    assert docker.source == DOCKER_URL and not any(isinstance(e, Notice) for e in events)


@pytest.mark.parametrize(
    ("head", "url"),
    [
        (b"<!-- saved from url=(0041)https://example.com/articles/lighthouse -->", None),
        (b"<!-- saved from url=(0039)https://example.com/articles/lighthouse -->",
         "https://example.com/articles/lighthouse"),
        (b"<!DOCTYPE html>\r\n<!-- saved from url=(0023)http://www.example.org/ -->",
         "http://www.example.org/"),
        (b"<!-- saved from url=(0014)about:internet -->", None),
        (b"<!-- saved from url=(0019)javascript:alert(1) -->", None),
        (b"<!-- saved from url=(0016)file:///etc/hosts -->", None),
        (b"<html><p>saved from url=(0019)https://example.com/</p>", None),
    ],
    ids=["wrong-length", "chrome", "after-doctype", "ie-zone", "javascript", "file", "no-comment"],
)  # fmt: skip
def test_only_an_http_address_of_the_length_written_is_taken(head: bytes, url: str | None) -> None:
    assert saved_from(head + b"\n<html><body><p>x</p></body></html>") == url


def test_a_path_that_is_no_saved_page_is_one_line_and_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    note = tmp_path / "note.md"
    note.write_text("# a note\n")
    for given, said in [
        (tmp_path / "missing", f"--saved {tmp_path / 'missing'}: no such file or folder"),
        (note, "not a saved web page (.html)"),
    ]:
        code = main(["ask", QUESTION, "--saved", str(given), "--no-web", "--reader", "extractive"])
        err = capsys.readouterr().err
        assert code == 3 and said in err and len(err.strip().splitlines()) == 1
