"""A page's publication date from its own metadata, so that the reader (and the user) can
tell a 2019 answer from this week's.

Only what the page declares is read, in this order: ``article:published_time`` (and its
kin) in ``<meta>``, JSON-LD ``datePublished``, then the first ``<time datetime>``. Dates in
the text are not guessed at. This runs on the decoded page before cleaning, which drops
``<meta>`` and scripts; regular expressions are enough for attributes and keep it fast.
"""

from __future__ import annotations

import datetime as dt
import re

_META = re.compile(r"<meta\b[^>]*>", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"""([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
_META_NAMES = (
    "article:published_time",
    "og:published_time",
    "datepublished",
    "publish_date",
    "pubdate",
    "dc.date.issued",
    "dc.date",
)
_JSON_LD = re.compile(r'"datePublished"\s*:\s*"([^"]{8,40})"')
_TIME = re.compile(r"<time\b[^>]*?\bdatetime\s*=\s*[\"']?([^\"'\s>]+)", re.IGNORECASE)
_ISO_DAY = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})")
_SCAN_BYTES = 2_000_000  # a date is declared near the top; a 5 MiB page is not read twice


def page_date(utf8: bytes) -> str:
    """The page's publication day (``YYYY-MM-DD``) from its UTF-8 bytes, or "" when it
    declares none."""
    head = utf8[:_SCAN_BYTES].decode("utf-8", "replace")
    named: dict[str, str] = {}
    for tag in _META.finditer(head):
        attributes = {
            match[1].lower(): match[2] or match[3] or match[4] or ""
            for match in _ATTRIBUTE.finditer(tag[0])
        }
        name = attributes.get("property") or attributes.get("name") or attributes.get("itemprop")
        if name and "content" in attributes:
            named.setdefault(name.lower(), attributes["content"])
    candidates = [named[name] for name in _META_NAMES if name in named]
    candidates += _JSON_LD.findall(head)[:1] + _TIME.findall(head)[:1]
    for text in candidates:
        day = _day(text)
        if day:
            return day
    return ""


def _day(text: str) -> str:
    """An ISO date or timestamp's day, if it is a real day no later than tomorrow."""
    match = _ISO_DAY.match(text)
    if not match:
        return ""
    try:
        day = dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return ""
    if day > dt.date.today() + dt.timedelta(days=1):
        return ""
    return day.isoformat()
