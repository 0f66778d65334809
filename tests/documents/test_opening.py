"""What the listing decided holds when a document is read: a file or folder swapped for a
link after the listing is not followed, a pipe swapped in does not block, and a file
replaced meanwhile is not taken for the one listed. Each case swaps a real file on disk
between ``find_documents`` and ``read_document``, where ``ask`` spends seconds."""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents import opening
from htmlrag_chat.documents.opening import open_checked, read_document
from htmlrag_chat.documents.walk import FoundFile, check_roots, find_documents
from htmlrag_chat.html.limits import MAX_PAGE_BYTES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
SECRET = "the safe's code is 4711"


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """A documents folder with a note and a subfolder, and a private folder beside it
    holding files of the same names."""
    root, outside = tmp_path / "docs", tmp_path / "private"
    (root / "sub").mkdir(parents=True)
    (outside / "sub").mkdir(parents=True)
    (root / "note.md").write_text("# boat shed\nThe key is under the mat.\n")
    (root / "sub" / "deep.md").write_text("# deep\nNothing to see.\n")
    for path in (outside / "note.md", outside / "sub" / "deep.md", outside / "deep.md"):
        path.write_text(f"# private\n{SECRET}\n")
    return root.resolve(), outside.resolve()


def listed(root: Path) -> dict[str, FoundFile]:
    found = find_documents(check_roots([str(root)]))
    assert found.problems == []
    return {file.path.relative_to(root).as_posix(): file for file in found.files}


def test_a_listed_file_is_read(folders: tuple[Path, Path]) -> None:
    root, _ = folders
    assert b"under the mat" in read_document(listed(root)["note.md"])


def test_a_file_swapped_for_a_link_after_the_listing_is_not_followed(
    folders: tuple[Path, Path],
) -> None:
    root, outside = folders
    file = listed(root)["note.md"]
    (root / "note.md").unlink()
    (root / "note.md").symlink_to(outside / "note.md")
    with pytest.raises(InputError) as caught:
        read_document(file)
    assert str(caught.value) == f"{root / 'note.md'}: a link now, not followed"


def test_a_folder_swapped_for_a_link_after_the_listing_is_not_followed(
    folders: tuple[Path, Path],
) -> None:
    root, outside = folders
    file = listed(root)["sub/deep.md"]
    shutil.rmtree(root / "sub")
    (root / "sub").symlink_to(outside / "sub")  # the same name leads elsewhere now
    with pytest.raises(InputError) as caught:
        read_document(file)
    assert SECRET not in str(caught.value)
    assert str(caught.value).startswith(f"{root / 'sub' / 'deep.md'}: ")
    # ...and a folder swapped before it is listed is not listed: no file of it is found.
    found = find_documents(check_roots([str(root)]))
    assert [file.path.name for file in found.files] == ["note.md"]
    assert len(found.problems) == 1 and "a link out of" in found.problems[0]


def test_a_pipe_swapped_in_does_not_block_and_is_refused(folders: tuple[Path, Path]) -> None:
    root, _ = folders
    file = listed(root)["note.md"]
    (root / "note.md").unlink()
    os.mkfifo(root / "note.md")  # a plain open() would wait for a writer forever
    with pytest.raises(InputError, match=r"note\.md: not a regular file now"):
        read_document(file)


def test_a_file_replaced_since_the_listing_is_not_taken_for_it(
    folders: tuple[Path, Path],
) -> None:
    root, outside = folders
    file = listed(root)["note.md"]
    shutil.copy(outside / "note.md", root / "note.tmp")
    os.replace(root / "note.tmp", root / "note.md")  # another file under the same name
    with pytest.raises(InputError, match="replaced since the folder was listed"):
        read_document(file)


def test_a_descriptor_outside_its_folder_is_refused(folders: tuple[Path, Path]) -> None:
    """Where the system says where an open file is, that place must lie in the folder:
    a file that is reached through a folder swapped for a link is not."""
    root, outside = folders
    descriptor = os.open(root / "note.md", os.O_RDONLY)
    try:
        assert opening.opened_path(descriptor) == root / "note.md"  # Linux's /proc
    finally:
        os.close(descriptor)
    target = outside / "deep.md"
    with pytest.raises(InputError) as caught:
        open_checked(target, root, None, folder=False)
    assert str(caught.value) == f"{target}: lies outside {root} now, not read"


def test_files_are_read_to_the_cap_of_their_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(MAX_PAGE_BYTES + 1)  # sparse: nothing written
    shutil.copy(FIXTURES / "orchard.pdf", tmp_path / "orchard.pdf")
    files = listed(tmp_path)
    with pytest.raises(InputError, match="larger than 5 MiB, the limit for one page"):
        read_document(files["big.txt"])
    pdf = opening.BY_KIND["pdf"]
    monkeypatch.setitem(opening.BY_KIND, "pdf", replace(pdf, cap=1000))
    with pytest.raises(InputError, match="the limit for a file of its type"):
        read_document(files["orchard.pdf"])
