"""SVG and MathML inside HTML: where a browser leaves them, so that libxml2 does too.

libxml2's HTML parser knows nothing of foreign content: everything after an unclosed
``<svg>`` or ``<math>`` becomes its content, and cleaning drops the whole element as
invisible, so ``<p>intro</p><svg><path/><p>Paris...`` keeps only "intro". HTML5 ends
foreign content at the start tag of an ordinary text element (``<p>``, ``<div>``, a
heading, a list, a table and the others below, and ``</p>`` or ``</br>``), unless it sits in
an integration point, where HTML goes on as usual. ``close_foreign`` writes the end tags a
browser implies there, on the bytes before parsing; pages without ``<svg`` or ``<math``
come back as they are, and only the foreign parts of the others are tokenized.

Of the integration points only SVG's ``<foreignObject>`` is one here: cleaning shows its
HTML (``clean._keep_foreign_objects``). The others (SVG ``<desc>``, MathML ``<mi>``,
``<mtext>`` and the like) go with their drawing or formula, so HTML after an unclosed one
ends the foreign content instead of going with it, as a browser would show it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from htmlrag_chat.html.markup import (
    _COMMENT,
    _RAW_TEXT_NAMES,
    _TAG_BODY,
    _TOKEN,
    _name,
    _raw_text_after,
    _start_tag,
)

_FOREIGN_START = re.compile(rb"<(?:svg|math)(?=[\s/>])", re.IGNORECASE)
_ROOTS = frozenset({"svg", "math"})
# Start tags that end foreign content (HTML's "any other start tag" rule in foreign content).
_BREAKOUT = frozenset(
    """
    b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i
    img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt
    u ul var
    """.split()
)
_BREAKOUT_END = frozenset({"p", "br"})
_FONT_BREAKOUT = re.compile(rb"\s(?:color|face|size)\s*=", re.IGNORECASE)
_INTEGRATION_POINT = "foreignobject"


def _skip_to(starts: Iterable[str], ends: Iterable[str]) -> re.Pattern[bytes]:
    """A possessive run, in C, over everything before the next start tag named in ``starts``
    or end tag named in ``ends``: text, comments, raw-text elements with their text (an
    "<svg>" in a script is no drawing) and other tags. It stops only where ``_TOKEN`` would
    see one of those tags, so the few tags that matter are the only ones looked at."""
    start_names = "|".join(sorted(starts, key=len, reverse=True)).encode()
    end_names = "|".join(sorted(ends, key=len, reverse=True)).encode()
    stop_end = rb"|/(?i:%s)[\s/>]" % end_names if end_names else b""
    return re.compile(
        rb"(?:[^<]++|" + _COMMENT
        + b"".join(rb"|<(?i:%s)(?=[\s/>])%s%s" % (name, _TAG_BODY, _raw_text_after(name))
                   for name in _RAW_TEXT_NAMES)
        + rb"|<(?!(?i:%s)[\s/>])[A-Za-z][^\s/>]*+" % start_names + _TAG_BODY
        + rb"|<(?![A-Za-z]" + stop_end + rb"))*+"
    )  # fmt: skip


_OUTSIDE = _skip_to(_ROOTS, ())
_INSIDE = _skip_to(
    {*_BREAKOUT, *_ROOTS, _INTEGRATION_POINT, "font"}, {*_ROOTS, *_BREAKOUT_END, _INTEGRATION_POINT}
)


def close_foreign(data: bytes) -> bytes:
    """``data`` with the end tags of the foreign content HTML5 would have ended."""
    if _FOREIGN_START.search(data) is None:
        return data
    out: list[bytes] = []
    # Open foreign roots and integration points, innermost last: ("root" | "point", name).
    stack: list[tuple[str, str]] = []
    done = position = 0
    while True:
        position = (_INSIDE if stack else _OUTSIDE).match(data, position).end()  # type: ignore[union-attr]
        if position >= len(data):
            break
        token = _TOKEN.match(data, position)
        if token is None:  # cannot happen: a stop is always at a tag
            position += 1
            continue
        position = token.end()
        tag, end = _start_tag(token), token["end"]
        in_foreign = bool(stack) and stack[-1][0] == "root"
        if tag is not None:
            name = _name(tag)
            closing = tag.rstrip(b">").endswith(b"/")
            if in_foreign and _breaks_out(name, tag):
                out += [data[done : token.start()], _close(stack)]
                done = token.start()
                in_foreign = False
            if name in _ROOTS and not closing:
                stack.append(("root", name))
            elif (
                in_foreign and not closing and name == _INTEGRATION_POINT and _root(stack) == "svg"
            ):
                stack.append(("point", name))
        elif end is not None:
            name = end.decode("ascii", "replace").lower()
            if in_foreign and name in _BREAKOUT_END:
                out += [data[done : token.start()], _close(stack)]
                done = token.start()
            elif in_foreign and name in _ROOTS:
                _pop(stack, name)
            elif stack and stack[-1] == ("point", name):
                stack.pop()
    out.append(data[done:])
    return b"".join(out)


def _breaks_out(name: str, tag: bytes) -> bool:
    return name in _BREAKOUT or (name == "font" and _FONT_BREAKOUT.search(tag) is not None)


def _root(stack: list[tuple[str, str]]) -> str:
    """The innermost open foreign root's name."""
    return next(name for kind, name in reversed(stack) if kind == "root")


def _close(stack: list[tuple[str, str]]) -> bytes:
    """End tags for the foreign roots open since the innermost integration point (or all of
    them), which leave the stack."""
    tags = []
    while stack and stack[-1][0] == "root":
        tags.append(b"</%s>" % stack.pop()[1].encode())
    return b"".join(tags)


def _pop(stack: list[tuple[str, str]], name: str) -> None:
    """An end tag in foreign content closes the innermost open root of its name and what is
    inside it. (In an integration point's HTML, a browser ignores it behind the HTML
    elements open there, and so does libxml2.)"""
    for index in range(len(stack) - 1, -1, -1):
        if stack[index][1] == name:
            del stack[index:]
            return
