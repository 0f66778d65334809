"""Is a downloaded page something a person could read, or a wall in front of one?

Bot challenges (Cloudflare's "Just a moment...", captcha walls) and JavaScript-only shells
arrive as ordinary HTML, often with status 200. Used as sources they give the reader LLM
nothing, or worse, a page of "verify you are human" to cite, so they are told apart here
from two signals: markers that challenge vendors put in their pages, and how much visible
text survives cleaning.
"""

from __future__ import annotations

import re

from htmlrag_chat.html.clean import clean_html
from htmlrag_chat.html.decode import decode_html
from htmlrag_chat.html.text import count_words, visible_text

# Fewer visible words than this and there is nothing to read: a JavaScript-only shell, a
# spinner, an empty template.
MIN_WORDS = 20

# Text outside tags, scripts, styles, templates and comments: a rough count of a page's words
# in one C-level pass. A page with this many is no wall (walls are short), which spares the
# full clean for almost every page (384 of the 400 corpus pages).
_NOT_TEXT = re.compile(
    rb"<(script|style|template|noscript|svg)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>",
    re.IGNORECASE | re.DOTALL,
)
PLAIN_PAGE_WORDS = 300

# A marker only counts on a short page. Real pages carry some of the same strings (sites
# behind Cloudflare load its bot-detection script, comment forms embed a captcha), but a
# challenge page says no more than a paragraph.
MARKER_MAX_WORDS = 150

# Strings that challenge and captcha pages carry in their HTML, matched case-insensitively.
CHALLENGE_MARKERS = re.compile(
    rb"""
    <title>\s*just\ a\ moment\.\.\.
    | attention\ required!\ \|\ cloudflare
    | /cdn-cgi/challenge-platform/h/
    | cf[-_]chl
    | checking\ your\ browser
    | enable\ javascript\ and\ cookies\ to\ continue
    | needs\ to\ review\ the\ security\ of\ your\ connection
    | verify(?:ing)?\ you\ are\ (?:a\ )?human
    | are\ you\ a\ robot
    | ddos-guard
    | captcha-delivery\.com
    | px-captcha
    | _incapsula_resource
    | incapsula\ incident\ id
    | pardon\ our\ interruption
    | awswafintegration
    | sgcaptcha
    | g-recaptcha
    | h-captcha
    | cf-turnstile
    """,
    re.IGNORECASE | re.VERBOSE,
)


def challenge_marker(page: bytes) -> str | None:
    """The first known challenge marker in a page, or None.

    On its own this says little (see ``MARKER_MAX_WORDS``); an HTTP 403 or 503 that carries
    one is a challenge, though, since a plain error page has no reason to.
    """
    match = CHALLENGE_MARKERS.search(page)
    return match.group(0).decode("ascii", "replace").lower() if match else None


def challenge_reason(page: bytes, charset: str | None = None) -> str | None:
    """Why a page is a bot challenge or a JavaScript-only shell (one line), or None when it
    has text to read. ``charset`` is the HTTP header's, as for ``decode_html``.

    About a millisecond for most pages; a short one costs a full clean (a few milliseconds
    per 100 KB) and, if still short, the marker search: call it off the event loop.
    """
    if len(_NOT_TEXT.sub(b" ", page).split()) >= PLAIN_PAGE_WORDS:
        return None
    utf8 = decode_html(page, charset).utf8
    words = count_words(visible_text(clean_html(utf8)))
    if words >= MARKER_MAX_WORDS:
        return None
    marker = challenge_marker(utf8)
    if marker is not None:
        return f"bot challenge page ({marker!r}, {words} words)"
    if words < MIN_WORDS:
        return f"no readable text ({words} words), likely a JavaScript-only page"
    return None
