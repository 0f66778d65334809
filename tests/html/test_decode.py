from __future__ import annotations

import codecs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from htmlrag_chat.html.decode import (
    decode_html,
    looks_binary,
    normalize_charset,
    sniff_meta_charset,
)


def test_utf8_passes_through_unchanged():
    data = "<p>Grüße, 東京</p>".encode()
    decoded = decode_html(data)
    assert decoded.utf8 is data
    assert decoded.source == "utf-8"


def test_meta_charset_is_used():
    data = '<meta charset="iso-8859-1"><p>Café</p>'.encode("latin-1")
    decoded = decode_html(data)
    assert "Café" in decoded.text
    assert decoded.source == "meta"
    assert decoded.encoding == "cp1252"  # WHATWG: latin-1 labels mean windows-1252


def test_http_equiv_content_type_is_read():
    data = b'<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
    assert sniff_meta_charset(data) == "cp932"  # WHATWG: Shift_JIS is windows-31j


def test_caller_charset_wins_over_meta():
    data = '<meta charset="utf-8"><p>Ça</p>'.encode("cp1252")
    decoded = decode_html(data, "windows-1252")
    assert "Ça" in decoded.text
    assert decoded.source == "caller"


def test_declared_utf8_that_is_not_falls_back_to_detection():
    data = '<meta charset="utf-8"><p>Résumé très détaillé</p>'.encode("cp1252") * 20
    decoded = decode_html(data)
    assert decoded.source == "detected"
    assert "\ufffd" not in decoded.text


def test_bom_decides_utf16():
    data = codecs.BOM_UTF16_LE + "<p>hé</p>".encode("utf-16-le")
    assert decode_html(data).text == "<p>hé</p>"


def test_unknown_meta_charset_is_ignored():
    decoded = decode_html(b'<meta charset="x-klingon"><p>plain</p>')
    assert decoded.source == "utf-8"


def test_unknown_caller_charset_is_ignored():
    decoded = decode_html(b"<p>x</p>", "x-klingon")
    assert decoded.source == "utf-8"


@given(st.binary(max_size=2000), st.sampled_from([None, "utf-8", "shift_jis", "cp1252"]))
def test_any_bytes_decode_to_valid_utf8(data: bytes, charset: str | None):
    decoded = decode_html(data, charset)
    decoded.utf8.decode("utf-8")  # never raises


@pytest.mark.parametrize(
    "data",
    [
        b"%PDF-1.7\n\x00\x01\x02binary",
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        bytes(range(32)) * 10,
    ],
)
def test_binary_data_is_recognized(data: bytes):
    assert looks_binary(data)


@pytest.mark.parametrize(
    "data",
    [b"<html><body>text</body></html>", codecs.BOM_UTF16_LE + "<p>x</p>".encode("utf-16-le"), b""],
)
def test_text_is_not_binary(data: bytes):
    assert not looks_binary(data)


PAGE = b"<p>Paris is the capital of France</p>"
# Codec names Python knows that are no web encoding: transforms that make bytes.decode raise,
# decoders that make surrogates of +2AA- or \ud800, and those that garble ASCII.
NOT_WEB_LABELS = [
    "rot13", "base64", "hex", "zlib", "bz2", "uu", "quopri", "undefined", "idna", "punycode",
    "unicode_escape", "raw_unicode_escape", "utf-7", "utf-32", "utf-32le", "cp037", "cp500",
    "x-user-defined", "replacement", "iso-2022-kr", "hz-gb-2312",
]  # fmt: skip


@pytest.mark.parametrize("label", NOT_WEB_LABELS)
def test_labels_no_browser_honours_are_ignored_from_meta_and_caller(label: str):
    data = f'<meta charset="{label}">'.encode() + PAGE + b" +2AA- \\ud800 +ADw-script+AD4-"
    for decoded in (decode_html(data), decode_html(data, label)):
        assert decoded.source == "utf-8" and decoded.encoding == "utf-8"
        assert "Paris is the capital of France" in decoded.text
        assert "+ADw-script+AD4-" in decoded.text  # never <script>, which hides the page


@pytest.mark.parametrize("label", ["utf-16", "UTF-16LE", "utf-16be", "unicode", "ucs-2"])
def test_utf16_from_a_meta_means_utf8_and_from_the_transport_needs_its_nuls(label: str):
    ascii_page = f'<meta charset="{label}">'.encode() + PAGE
    assert decode_html(ascii_page).encoding == "utf-8"
    assert decode_html(ascii_page, label).text == ascii_page.decode()
    utf16 = "<p>Grüße</p>".encode("utf-16-be" if label.lower().endswith("be") else "utf-16-le")
    assert decode_html(utf16, label).text == "<p>Grüße</p>"


@pytest.mark.parametrize(
    ("label", "codec"),
    [(" Latin1 ", "cp1252"), ("US-ASCII", "cp1252"), ("x-sjis", "cp932"), ("euc-kr", "cp949"),
     ("gbk", "gb18030"), ("big5", "big5hkscs"), ("unicode-1-1-utf-8", "utf-8"),
     ("iso-8859-8-i", "iso8859-8"), ("'koi8-r'", "koi8-r")],
)  # fmt: skip
def test_whatwg_labels_map_to_the_decoder_browsers_use(label: str, codec: str):
    assert normalize_charset(label) == codec


def test_a_meta_label_from_a_legacy_encoding_still_decodes():
    data = '<meta charset="windows-1251"><p>Привет</p>'.encode("cp1251")
    decoded = decode_html(data)
    assert decoded.source == "meta" and "Привет" in decoded.text
