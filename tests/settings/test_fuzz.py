"""Fuzzing the settings: any text for any setting, and the settings file as any kind of file.

Values: each example gives one setting a text (any Unicode, line separators, controls,
surrogates of bytes that are not UTF-8, numbers past every bound) as an option, a variable
or ``config set`` would. It asserts that the text is refused with one short line, or gives a
value its kind checks again to itself, which ``config set`` writes into a file (one holding
comments with U+2028, U+0085 and CR LF) and which that file then gives back.

File kinds: each example puts a kind of file where the settings file is looked for (a
regular file of any bytes, a FIFO, a folder, a socket, a device, a missing file, or a
symbolic link to any of them, a dangling or a looping one). It asserts that reading it gives
settings or one line, never waiting; that ``config set`` succeeds exactly when there is a
file (or a place for one) to write, leaves a link a link and a FIFO a FIFO, and writes the
value the next read gives back.
"""

from __future__ import annotations

import os
import socket
import stat
import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from htmlrag_chat.base.errors import UserError
from htmlrag_chat.settings.edit import set_value
from htmlrag_chat.settings.kinds import Integer, Seconds
from htmlrag_chat.settings.layered import file_values, read_toml
from htmlrag_chat.settings.tree import SETTINGS, Setting

EDGES = [
    "\u2028", "\u2029", "\x85", "\x1c", "\x1d", "\x1e", "\v", "\f", "\r\n", "\n", "\udcff",
    "\u202e", "\x1b[2J", '"', "\\", "'''", "#", "[", "]", "=", ",", " ", "", "0", "-1", "1e308",
    "inf", "nan", "9" * 40, "10" * 3000, "http://", "socks5h://127.0.0.1:9050",
    "https://bücher.de/", "EVIL.example.", "cuda:0", "auto", "two-stage", "searxng,duckduckgo",
]  # fmt: skip
TEXT = st.lists(st.sampled_from(EDGES) | st.text(max_size=12), max_size=5).map("".join)
EXISTING = "# mine\u2028still a comment\x85 too\r\n[research]  # x\u2029y\nrounds = 2\n"


def plausible(setting: Setting) -> st.SearchStrategy[str]:
    """Text close to what the setting takes: numbers around its range, names of its kind."""
    kind = setting.kind
    if isinstance(kind, Integer):
        return st.integers(kind.least - 2, kind.most + 2).map(str)
    if isinstance(kind, Seconds):
        return st.floats(-1, kind.most * 1.1).map(repr)
    if kind.choices:
        return st.sampled_from(list(kind.choices)) | st.just(",".join(kind.choices))
    return st.text(st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), max_size=20)


@given(data=st.data(), setting=st.sampled_from(SETTINGS))
@settings(max_examples=300, deadline=None)
def test_any_text_for_any_setting_is_refused_in_one_line_or_written_and_read_back(
    data: st.DataObject, setting: Setting
) -> None:
    text = data.draw(TEXT | plausible(setting), label="text")
    kind = setting.kind
    try:
        value = kind.parse(text)
    except ValueError as refused:
        message = str(refused)
        assert "\n" not in message and "\r" not in message and len(message) < 300
        event("refused")
        return
    event("accepted")
    assert kind.check(value) == value
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        path.write_bytes(EXISTING.encode("utf-8"))
        change = set_value(path, setting.key, text)
        assert change.value == value
        written = file_values(path, read_toml(path))
        assert written[setting.key] == value
        assert setting.key == "research.rounds" or written["research.rounds"] == 2
        assert path.read_bytes().decode("utf-8").startswith(EXISTING.split("[research]")[0])


KINDS = ["regular", "fifo", "folder", "socket", "device", "missing"]


@st.composite
def settings_files(draw: st.DrawFn) -> tuple[str, int, bytes]:
    """A kind, how many links lead to it (-1: a link to itself), the bytes of a regular
    file."""
    kind = draw(st.sampled_from(KINDS))
    links = draw(st.sampled_from([0, 0, 1, 2, -1]))
    data = draw(
        st.sampled_from([b"", b"[research]\nrounds = 3\n", b"[reader\n", b"\xff\xfe"])
        | st.sampled_from(["#\x85\n", "# \u2028\r\n[web]\ndeadline = 2\n"]).map(str.encode)
        | st.binary(max_size=64)
    )
    return kind, links, data


def make(folder: Path, kind: str, links: int, data: bytes) -> tuple[Path, Path, socket.socket]:
    """The file of ``kind`` in ``folder`` and the path naming it (through ``links`` links)."""
    target = folder / "target.toml"
    server = socket.socket(socket.AF_UNIX)
    if kind == "regular":
        target.write_bytes(data)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    elif kind == "socket":
        server.bind(str(target))
    elif kind == "device":
        target.symlink_to("/dev/null")
    path = target
    if links == -1:
        path = folder / "loop.toml"
        path.symlink_to(path.name)
    for number in range(links):
        link = folder / f"link{number}.toml"
        link.symlink_to(path.name)
        path = link
    return path, target, server


@given(file=settings_files())
@settings(max_examples=200, deadline=None)
def test_any_kind_of_settings_file_is_read_or_refused_at_once_and_set_keeps_its_kind(
    file: tuple[str, int, bytes],
) -> None:
    kind, links, data = file
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        path, target, server = make(folder, kind, links, data)
        with server:
            before = os.lstat(path).st_mode if os.path.lexists(path) else None
            try:
                read = read_toml(path)
            except UserError as refused:
                assert "\n" not in str(refused)
                read = None
            writable = (kind == "regular" and read is not None) or (
                kind == "missing" and links >= 0
            )
            try:
                set_value(path, "research.rounds", "1")
            except UserError as refused:
                assert "\n" not in str(refused) and not writable, str(refused)
                event(f"set refused: {kind}")
                if before is not None:
                    assert stat.S_IFMT(os.lstat(path).st_mode) == stat.S_IFMT(before)
                return
            event(f"set: {kind}")
            assert writable
            assert stat.S_IFMT(os.lstat(path).st_mode) == stat.S_IFMT(before or stat.S_IFREG)
            assert file_values(path, read_toml(path))["research.rounds"] == 1
            assert target.is_file() and not target.is_symlink()
