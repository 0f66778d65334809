"""Bytes to text for web pages.

Pages arrive as bytes whose charset may come from HTTP headers, a BOM, a ``<meta>`` tag, or
nowhere at all, and any of these may lie. The order here follows what browsers do
(caller > BOM > meta > detection) with one guard: a declared UTF-8 that does not decode
strictly falls through to detection. Decoding never raises: undecodable bytes become U+FFFD.

One policy for every label, whether it comes from an HTTP header (live, or stored with a
page in an older cache), a ``<meta>`` tag or ``--encoding``: only WHATWG labels count
(``charsets.py``), anything else is ignored as a browser ignores it (the commands refuse
such an ``--encoding`` before reading anything, since the user asked for it). As in a browser, a
``<meta>`` that says UTF-16 means UTF-8 (the tag was readable as ASCII), and a UTF-16 label
from outside the page is believed only for bytes that hold the NULs UTF-16 text has.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from charset_normalizer import from_bytes

from htmlrag_chat.html.charsets import UTF16, codec_for_detected, codec_for_label

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
    """The Python codec for a WHATWG encoding label; None for any other name (``rot13``,
    ``utf-7``, ``cp037``, ``x-klingon``), which the decoder ignores."""
    return codec_for_label(label)


def sniff_meta_charset(data: bytes) -> str | None:
    """The charset declared by a ``<meta>`` tag near the start of the page, if valid."""
    match = _META_CHARSET.search(data[:_META_SCAN_BYTES])
    if match is None:
        return None
    encoding = normalize_charset(match.group(1).decode("ascii", "replace"))
    return "utf-8" if encoding in UTF16 else encoding


def decode_html(data: bytes, charset: str | None = None) -> Decoded:
    """Decode page bytes to UTF-8; ``charset`` is the caller's (an HTTP header, a stored
    page's, ``--encoding``) and wins when it is a web encoding that fits the bytes."""
    encoding = normalize_charset(charset) if charset is not None else None
    if encoding is not None and _fits(data, encoding):
        return _transcode(data, encoding, "caller")

    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _transcode(data[len(bom) :], encoding, "bom")

    declared = sniff_meta_charset(data)
    if declared is not None and _fits(data, declared):
        return _transcode(data, declared, "meta")

    if _is_utf8(data):
        return Decoded(data, "utf-8", "utf-8")

    best = from_bytes(data[:_DETECT_BYTES]).best()
    detected = codec_for_detected(best.encoding) if best is not None else None
    encoding = detected if detected is not None and _fits(data, detected) else "cp1252"
    return _transcode(data, encoding, "detected")


def _transcode(data: bytes, encoding: str, source: str) -> Decoded:
    if encoding == "utf-8" and _is_utf8(data):
        return Decoded(data, encoding, source)
    return Decoded(data.decode(encoding, "replace").encode("utf-8", "replace"), encoding, source)


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _fits(data: bytes, encoding: str) -> bool:
    """False for two common lies: UTF-8 declared for bytes that are not UTF-8, and UTF-16
    for bytes without the NULs that the ASCII of any HTML page has in UTF-16."""
    if encoding == "utf-8":
        return _is_utf8(data)
    if encoding in UTF16:
        return b"\x00" in data[:_META_SCAN_BYTES]
    return True
