"""The types that are text, to HTML: an HTML file as it is; Markdown rendered by
markdown-it-py (CommonMark with tables and strikethrough: headings, lists and tables become
the same elements a page has; a YAML front matter's ``title:`` is the title); plain text as
paragraphs (blank lines between them)."""

from __future__ import annotations

import html
import re

from htmlrag_chat.base.errors import InputError
from htmlrag_chat.documents.made import Made
from htmlrag_chat.html.decode import decode_html, looks_binary

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_PARAGRAPHS = re.compile(r"\n[ \t]*\n+")


def html_as_is(data: bytes, name: str) -> Made:
    """An HTML file, its encoding found as a web page's is."""
    return Made(data, encoding=None)


def markdown_html(data: bytes, name: str) -> Made:
    """Markdown as an HTML page; raw HTML in it passes on to cleaning, as a page's would."""
    from markdown_it import MarkdownIt

    text = _text(data, name)
    title = ""
    front = _FRONT_MATTER.match(text)
    if front is not None:
        declared = _FRONT_TITLE.search(front.group(1))
        title = declared.group(1).strip("'\"") if declared else ""
        text = text[front.end() :]
    renderer = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    body = renderer.render(text)
    page = f"<html><head><title>{html.escape(title)}</title></head><body>{body}</body></html>"
    return Made(page.encode("utf-8"))


def text_html(data: bytes, name: str) -> Made:
    """Plain text as an HTML page: a paragraph per blank-line-separated run (the lines of
    one run are one paragraph, as a browser would show them)."""
    text = _text(data, name)
    paragraphs = _PARAGRAPHS.split(text.replace("\r\n", "\n").replace("\r", "\n").strip())
    body = "".join(f"<p>{html.escape(part)}</p>" for part in paragraphs)
    return Made(f"<html><body>{body}</body></html>".encode())


def _text(data: bytes, name: str) -> str:
    """The file's text, decoded as a page's would be; binary data is an ``InputError``."""
    if looks_binary(data):
        raise InputError(f"{name}: binary data, not text")
    return decode_html(data).text
