"""Files the commands write over: never an input, never half (issue 21); a link in an output
folder is replaced, never written through, while a file the user named for an export or a
report (``cache export --jsonl``, ``eval --out``) is written through its link, over an
existing file only with --force, and never over anything but a regular file (issue 47).

Real CLI in process, real files and SQLite caches in a temporary folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from htmlrag_chat.cli import main
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

PAGE = b"<html><body><p>Paris is the capital of France.</p></body></html>"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_clean_refuses_to_write_over_its_own_input(capsys, tmp_path, monkeypatch):
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "clean", "--out-dir", ".", "page.html")
    assert code == 2 and one_line_error(err) and "page.html" in err
    assert page.read_bytes() == PAGE


def test_clean_refuses_an_input_reached_through_a_link_and_writes_nothing(capsys, tmp_path):
    page, other = tmp_path / "page.html", tmp_path / "other.html"
    page.write_bytes(PAGE)
    other.write_bytes(PAGE)
    out = tmp_path / "o"
    out.mkdir()
    (out / "link.html").symlink_to(page)
    (out / "other.html").symlink_to(other)  # a second input, written over by the first? no
    code, _, err = run(capsys, "clean", "--out-dir", str(out), str(out / "link.html"), str(other))
    assert code == 2 and one_line_error(err)
    assert page.read_bytes() == PAGE and other.read_bytes() == PAGE
    assert (out / "link.html").is_symlink() and (out / "other.html").is_symlink()


def test_clean_replaces_a_link_in_its_output_folder_instead_of_writing_through_it(capsys, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    out = tmp_path / "o"
    out.mkdir()
    (out / "page.html").symlink_to(victim)
    code, _, err = run(capsys, "clean", "--out-dir", str(out), str(page))
    assert code == 0, err
    assert victim.read_text(encoding="utf-8") == "keep me"
    written = out / "page.html"
    assert not written.is_symlink() and "Paris is the capital" in written.read_text("utf-8")
    assert [p.name for p in out.iterdir()] == ["page.html"]  # no temporary file left


def cache_with_a_page(path: Path) -> None:
    with Store.open(path) as store:
        store.put_search("q", [SearchResult("https://x.example/", "X")])
        store.put_page(FetchResult("https://x.example/", Outcome.OK, status=200, body=PAGE))


@pytest.mark.parametrize("target", ["c.db", "c.db-wal", "link.jsonl", "hard.jsonl"])
def test_cache_export_onto_the_cache_is_refused_and_the_cache_kept(capsys, tmp_path, target: str):
    cache = tmp_path / "c.db"
    cache_with_a_page(cache)
    (tmp_path / "link.jsonl").symlink_to(cache)
    os.link(cache, tmp_path / "hard.jsonl")
    before = cache.read_bytes()
    code, _, err = run(
        capsys, "--cache", str(cache), "cache", "export", "--jsonl", str(tmp_path / target),
        "--force",  # even then
    )  # fmt: skip
    assert code == 2 and one_line_error(err) and "refusing to write" in err
    assert cache.read_bytes() == before
    code, out, _ = run(capsys, "--cache", str(cache), "search", "q", "--replay")
    assert code == 0 and "https://x.example/" in out  # the cache still answers


def test_an_export_with_a_row_it_cannot_read_leaves_it_out_and_replaces_the_old_file(
    capsys, tmp_path
):
    cache = tmp_path / "c.db"
    cache_with_a_page(cache)
    with Store.open(cache) as store:  # passes SQLite's checks, but is no JSON object
        store._db.execute("UPDATE pages SET headers = '{'")
    exported = tmp_path / "out.jsonl"
    exported.write_text("previous export\n", encoding="utf-8")
    argv = ["--cache", str(cache), "cache", "export", "--jsonl", str(exported), "--force"]
    code, _, err = run(capsys, *argv)
    assert code == 0 and "left out the page https://x.example/" in err
    assert '"html": null' in exported.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_cache_export_writes_over_an_earlier_file_only_with_force(capsys, tmp_path):
    """An earlier recording was once replaced without a word, even by an empty export."""
    cache = tmp_path / "c.db"
    Store.open(cache).close()  # an empty cache: the export would hold nothing
    recording = tmp_path / "recording.jsonl"
    recording.write_text('{"query": "q", "results": []}\n', encoding="utf-8")
    code, out, err = run(
        capsys, "--cache", str(cache), "cache", "export", "--jsonl", str(recording)
    )
    assert code == 2 and out == "" and one_line_error(err)
    assert f"{recording} exists: --force writes over it" in err
    assert recording.read_text(encoding="utf-8") == '{"query": "q", "results": []}\n'
    argv = ["--cache", str(cache), "cache", "export", "--jsonl", str(recording), "--force"]
    assert run(capsys, *argv)[:2] == (0, '{"exported": 0}\n')
    assert recording.read_text(encoding="utf-8") == ""
    code, _, err = run(capsys, "--cache", str(cache), "cache", "stats", "--force")
    assert code == 2 and "--force goes with cache export" in err


@pytest.mark.parametrize("existing", [True, False])
def test_cache_export_writes_through_a_link_to_the_file_it_names(capsys, tmp_path, existing):
    cache = tmp_path / "c.db"
    cache_with_a_page(cache)
    target = tmp_path / "shared" / "recording.jsonl"
    target.parent.mkdir()
    if existing:
        target.write_text("an earlier recording\n", encoding="utf-8")
    link = tmp_path / "recording.jsonl"
    link.symlink_to(target)
    argv = ["--cache", str(cache), "cache", "export", "--jsonl", str(link)]
    code, _, err = run(capsys, *argv, *(["--force"] if existing else []))
    assert code == 0, err
    assert link.is_symlink() and '"url": "https://x.example/"' in target.read_text("utf-8")


@pytest.mark.parametrize("kind", ["fifo", "folder", "link to a fifo"])
def test_cache_export_never_replaces_what_is_not_a_regular_file(capsys, tmp_path, kind):
    """Run as root, ``cache export --jsonl /dev/null`` once replaced the device with a
    regular file; a FIFO here stands for every such file (a device, a socket)."""
    cache = tmp_path / "c.db"
    cache_with_a_page(cache)
    target = tmp_path / "out.jsonl"
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        os.mkfifo(tmp_path / "fifo")
        target.symlink_to(tmp_path / "fifo")
    argv = ["--cache", str(cache), "cache", "export", "--jsonl", str(target), "--force"]
    code, _, err = run(capsys, *argv)
    assert code == 2 and one_line_error(err)
    if kind == "folder":
        assert "it is a folder" in err and target.is_dir()
    else:  # the FIFO stays a FIFO (stat follows the link)
        assert "it is not a regular file" in err and stat.S_ISFIFO(target.stat().st_mode)
