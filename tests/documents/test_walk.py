"""Finding documents: the paths given are taken as given, and nothing inside a folder leads
out of it; other types, hidden entries and special files are passed over."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError, UserError
from htmlrag_chat.documents import walk
from htmlrag_chat.documents.walk import check_roots, find_documents
from htmlrag_chat.modelio.extras import MissingExtra, install_line

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def names(found: walk.Found, root: Path) -> list[str]:
    return [file.path.relative_to(root).as_posix() for file in found.files]


def test_a_folder_is_read_recursively_in_path_order_with_kinds(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES, tmp_path / "docs")
    root = tmp_path / "docs"
    (root / "photo.PNG").write_bytes(b"\x89PNG")
    (root / "notes" / "Makefile").write_text("all:\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("# hidden\n")
    (root / ".draft.md").write_text("# hidden too\n")
    found = find_documents(check_roots([str(root)]))
    assert names(found, root) == [
        "lighthouse.html", "notes/beekeeping.md", "notes/boatshed.txt", "orchard.pdf",
    ]  # fmt: skip
    assert [file.kind for file in found.files] == ["html", "markdown", "text", "pdf"]
    assert dict(found.other_types) == {".png": 1, "no extension": 1}
    assert found.problems == [] and found.over == 0
    first = found.files[0]
    assert (first.size, first.mtime_ns) == (
        (root / "lighthouse.html").stat().st_size,
        (root / "lighthouse.html").stat().st_mtime_ns,
    )


def test_a_link_out_of_the_folder_is_not_followed_and_said(tmp_path: Path) -> None:
    root, outside = tmp_path / "docs", tmp_path / "private"
    root.mkdir(), outside.mkdir()
    (outside / "secret.txt").write_text("the safe's code is 4711\n")
    (outside / "more").mkdir()
    (outside / "more" / "deep.md").write_text("# deep\n")
    (root / "own.md").write_text("# mine\n")
    (root / "secret.txt").symlink_to(outside / "secret.txt")
    (root / "elsewhere").symlink_to(outside / "more")
    (root / "parent").symlink_to(tmp_path)
    found = find_documents(check_roots([str(root)]))
    assert names(found, root.resolve()) == ["own.md"]
    assert len(found.problems) == 3
    assert all("a link out of" in line and "not followed" in line for line in found.problems)
    assert any(str(root / "secret.txt") in line for line in found.problems)
    # Followed on purpose: the target given as a path of its own.
    found = find_documents(check_roots([str(root), str(root / "secret.txt")]))
    assert sorted(file.path.name for file in found.files) == ["own.md", "secret.txt"]


def test_a_link_inside_the_folder_is_followed_once_and_a_loop_ends(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "a").mkdir(parents=True)
    (root / "a" / "note.md").write_text("# note\n")
    (root / "alias.md").symlink_to(root / "a" / "note.md")
    (root / "a" / "loop").symlink_to(root)  # a link back up: a cycle
    found = find_documents(check_roots([str(root)]))
    assert names(found, root.resolve()) == ["a/note.md"]
    assert found.problems == []
    # Each path given is a boundary of its own: from inside "a", the loop leads out.
    found = find_documents(check_roots([str(root / "a")]))
    assert names(found, root.resolve()) == ["a/note.md"] and len(found.problems) == 1


def test_special_files_are_passed_over_and_refused_when_named(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    os.mkfifo(root / "pipe.txt")  # opening it would wait for a writer
    (root / "real.txt").write_text("words\n")
    found = find_documents(check_roots([str(root)]))
    assert names(found, root.resolve()) == ["real.txt"]
    with pytest.raises(InputError, match=r"pipe\.txt: not a regular file or a folder"):
        check_roots([str(root / "pipe.txt")])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("missing", "--docs {path}: no such file or folder"),
        ("photo.png", "--docs {path}: not a type this reads (HTML, Markdown, text, PDF and Word)"),
    ],
)
def test_a_path_that_cannot_be_used_is_an_error_naming_it(
    tmp_path: Path, given: str, message: str
) -> None:
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    path = tmp_path / given
    with pytest.raises(InputError) as caught:
        check_roots([str(path)])
    assert str(caught.value) == message.format(path=path)


def test_a_named_pdf_needs_its_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walk, "needs_extra", _missing_pdf)
    with pytest.raises(MissingExtra, match=re.escape(install_line("pdf"))):
        check_roots([str(FIXTURES / "orchard.pdf")])
    assert check_roots([str(FIXTURES)]) == [FIXTURES.resolve()]  # a folder is not refused


def test_past_the_cap_documents_are_counted_not_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(walk, "MAX_FILES", 3)
    for number in range(5):
        (tmp_path / f"{number}.txt").write_text("x\n")
    found = find_documents(check_roots([str(tmp_path)]))
    assert len(found.files) == 3 and found.over == 2


def _missing_pdf(extra: str, purpose: str) -> None:
    raise MissingExtra(purpose, extra, "pypdfium2")


def test_a_link_in_a_loop_is_left_out_with_a_line_and_the_rest_found(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "note.md").write_text("# note\n")
    (root / "a.md").symlink_to(root / "b.md")  # a -> b -> a
    (root / "b.md").symlink_to(root / "a.md")
    (root / "sub" / "self").symlink_to(root / "sub" / "self")  # a link to itself
    found = find_documents(check_roots([str(root)]))
    assert names(found, root.resolve()) == ["note.md"]
    assert sorted(found.problems) == [
        f"{root.resolve() / name}: a link in a loop (it leads back to itself), left out"
        for name in ("a.md", "b.md", "sub/self")
    ]


def test_every_path_in_a_line_is_on_one_line(tmp_path: Path) -> None:
    """A file name may hold a newline, an escape or a bidi override: said, it stays one line."""
    root, outside = tmp_path / "docs", tmp_path / "out\nhtmlrag-chat: note: all safe"
    root.mkdir(), outside.mkdir()
    (outside / "x.md").write_text("# x\n")
    (root / "link\n\x1b[2Jname.md").symlink_to(outside / "x.md")
    (root / "loop\u202e.md").symlink_to(root / "loop\u202e.md")
    (root / "notes.t\nxt").write_text("words\n")
    found = find_documents(check_roots([str(root)]))
    assert len(found.problems) == 2 and all(len(p.splitlines()) == 1 for p in found.problems)
    assert any("link\\n\\x1b[2Jname.md: a link out of" in p for p in found.problems)
    assert any(
        "out\\nhtmlrag-chat: note: all safe/x.md), not followed" in p for p in found.problems
    )
    assert any("loop\\u202e.md: a link in a loop" in p for p in found.problems)
    assert dict(found.other_types) == {".t\\nxt": 1}


def test_a_name_that_is_not_utf8_is_found_and_said_escaped(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    name = os.fsdecode(b"caf\xe9.txt")  # from an old archive: Latin-1
    (root / name).write_text("espresso\n")
    (root / os.fsdecode(b"loop\xff.md")).symlink_to(root / os.fsdecode(b"loop\xff.md"))
    found = find_documents(check_roots([str(root)]))
    assert [file.path.name for file in found.files] == [name]
    assert found.problems == [
        f"{root.resolve()}/loop\\xff.md: a link in a loop (it leads back to itself), left out"
    ]


def test_a_home_of_no_user_is_an_error_naming_the_path() -> None:
    with pytest.raises(UserError) as caught:
        check_roots(["~nosuchuser/notes"])
    assert str(caught.value) == "--docs ~nosuchuser/notes: ~nosuchuser names no user on this system"
