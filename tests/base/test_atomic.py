"""The one way files are written over: whole or not at all, never onto an input, never
through a link (issue 21). Real files in a temporary folder."""

from __future__ import annotations

import os
import stat

import pytest

from htmlrag_chat.base.atomic import atomic_output, write_text
from htmlrag_chat.base.errors import UserError


def test_a_failure_half_way_leaves_the_old_file_and_no_temporary_one(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_output(target) as file:
        file.write(b"half of the new")
        raise RuntimeError("disk full")
    assert target.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_the_new_file_keeps_the_old_ones_permissions(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_text(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_an_input_by_any_name_is_refused_before_anything_is_written(tmp_path):
    source = tmp_path / "in.html"
    source.write_text("input", encoding="utf-8")
    os.link(source, tmp_path / "hard.html")
    (tmp_path / "soft.html").symlink_to(source)
    for name in ("in.html", "hard.html", "soft.html", "./in.html"):
        with pytest.raises(UserError, match="refusing to write"):
            write_text(tmp_path / name, "output", inputs=[source])
    assert source.read_text(encoding="utf-8") == "input"


def test_a_link_in_the_way_is_replaced_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep", encoding="utf-8")
    (tmp_path / "out.md").symlink_to(victim)
    write_text(tmp_path / "out.md", "new")
    assert victim.read_text(encoding="utf-8") == "keep"
    assert not (tmp_path / "out.md").is_symlink()
    assert (tmp_path / "out.md").read_text(encoding="utf-8") == "new"


def test_a_folder_or_a_missing_folder_is_one_user_error(tmp_path):
    with pytest.raises(UserError, match="it is a folder"):
        write_text(tmp_path, "x")
    with pytest.raises(UserError, match="cannot write"):
        write_text(tmp_path / "missing" / "out.txt", "x")
