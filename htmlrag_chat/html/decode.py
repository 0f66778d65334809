"""Bytes to text for web pages.

Pages arrive as bytes whose charset may come from HTTP headers, a BOM, a ``<meta>`` tag, or
nowhere at all, and any of these may lie. The order here follows what browsers do
(caller > BOM > meta > detection) with one guard: a declared UTF-8 that does not decode
strictly falls through to detection. Decoding never raises: undecodable bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from charset_normalizer import from_bytes

from htmlrag_chat.errors import InputError

# WHATWG maps these labels to other decoders; Python's codecs would be stricter or wrong.
_LABEL_ALIASES = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "latin1": "cp1252",
    "latin-1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "x-sjis": "shift_jis",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    # A byte stream cannot really be UTF-16 if its <meta> was readable as ASCII.
    "utf-16": "utf-8",
    "utf-16le": "utf-8",
    "utf-16be": "utf-8",
}

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_META_CHARSET = re.compile(
    rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""",
    re.IGNORECASE,
)
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")
_META_SCAN_BYTES = 16 * 1024
_DETECT_BYTES = 64 * 1024


@dataclass(frozen=True)
class Decoded:
    """A page as valid UTF-8 bytes, and where its encoding came from.

    ``source`` is one of caller, bom, meta, utf-8, detected. Pages stay bytes because the
    parser wants bytes: most pages are UTF-8 already and pass through without a copy.
    """

    utf8: bytes
    encoding: str
    source: str

    @property
    def text(self) -> str:
        return self.utf8.decode("utf-8")


def looks_binary(data: bytes) -> bool:
    """Whether bytes are not text at all (images, PDFs, archives), judged on their start.

    A UTF-16 page has NUL bytes too, but it starts with a BOM, which is checked first.
    """
    head = data[:4096]
    if any(head.startswith(bom) for bom, _ in _BOMS):
        return False
    if b"\x00" in head:
        return True
    controls = sum(byte < 32 and byte not in _TEXT_CONTROLS for byte in head)
    return controls > len(head) * 0.1


def normalize_charset(label: str) -> str | None:
    """Return a Python codec name for a charset label, or None when the label is unknown."""
    label = label.strip().strip("\"'").lower()
    label = _LABEL_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def sniff_meta_charset(data: bytes) -> str | None:
    """The charset declared by a ``<meta>`` tag near the start of the page, if valid."""
    match = _META_CHARSET.search(data[:_META_SCAN_BYTES])
    if match is None:
        return None
    return normalize_charset(match.group(1).decode("ascii", "replace"))


def decode_html(data: bytes, charset: str | None = None) -> Decoded:
    """Decode page bytes to UTF-8; ``charset`` is the caller's (e.g. HTTP header) and wins
    when valid.

    An unknown caller charset is a usage error (the caller asked for it explicitly); an
    unknown charset inside the page is ignored.
    """
    if charset is not None:
        encoding = normalize_charset(charset)
        if encoding is None:
            raise InputError(f"unknown encoding: {charset}")
        if not _is_false_utf8(data, encoding):
            return _transcode(data, encoding, "caller")

    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _transcode(data[len(bom) :], encoding, "bom")

    declared = sniff_meta_charset(data)
    if declared is not None and not _is_false_utf8(data, declared):
        return _transcode(data, declared, "meta")

    if _is_utf8(data):
        return Decoded(data, "utf-8", "utf-8")

    best = from_bytes(data[:_DETECT_BYTES]).best()
    encoding = (normalize_charset(best.encoding) if best is not None else None) or "cp1252"
    return _transcode(data, encoding, "detected")


def _transcode(data: bytes, encoding: str, source: str) -> Decoded:
    if encoding == "utf-8" and _is_utf8(data):
        return Decoded(data, encoding, source)
    return Decoded(data.decode(encoding, "replace").encode("utf-8"), encoding, source)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _is_false_utf8(data: bytes, encoding: str) -> bool:
    """True when UTF-8 is declared but the bytes are not UTF-8 (a common server lie)."""
    return encoding == "utf-8" and not _is_utf8(data)
