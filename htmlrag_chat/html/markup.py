"""Byte-level passes over a page before libxml2 parses it, against markup that breaks it.

libxml2 is fast on real pages, but three kinds of input make it fail or crawl, and each is
cheapest to defuse on the bytes:

- A character reference to a character XML cannot hold (``&#x1b;``, ``&#1;``, ``&#xFFFE;``,
  ``&#8`` without its semicolon) is decoded into the tree, and lxml then refuses every edit
  of that text with ``ValueError``. The references are removed (a form feed becomes the
  space it renders as), as the raw control bytes already are.
- Attributes: libxml2 compares each attribute of an element with all the ones before it,
  so 100,000 attributes on one element take seconds and a million take minutes. Start
  tags are capped at ``MAX_ATTRIBUTES`` attributes. (A long tag with few attributes, say a
  10 MB attribute value, costs the parser linear time like any text; the page cap bounds
  it.)
- Nesting: libxml2 stops at 2,048 open elements and drops everything after that point.
  ``flatten_deep`` removes the tags nested deeper than a limit, keeping their text.

The tokenizer here follows HTML5 where it matters for these passes: a start tag runs to the
first ``>`` outside a quoted attribute value, and script, style and the other raw-text
elements hold no tags, so nothing inside them is ever rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# More attributes than real elements carry (the most on the 400 pages of the shared corpus:
# 38 on a <div>, 43 on an <img> whose stray quotes split its alt text); 64 squared
# comparisons cost libxml2 microseconds.
MAX_ATTRIBUTES = 64
# Attributes that cleaning reads: they survive a capped tag whatever their position.
MEANINGFUL_ATTRIBUTES = frozenset({b"hidden", b"style", b"colspan", b"rowspan"})

# References to code points lxml refuses: C0 controls but tab, line feed and carriage
# return, and the noncharacters U+FFFE and U+FFFF, in decimal or hex, with any leading
# zeros and with or without the semicolon (as the parser reads them).
_BAD_REFERENCE = re.compile(
    rb"&#(?:[xX]0*+(?:([cC])|[0-8bBeEfF]|1[0-9a-fA-F]|[fF]{3}[eEfF])(?![0-9a-fA-F])"
    rb"|0*+(?:(12)|[0-8]|1[14-9]|2[0-9]|3[01]|6553[45])(?![0-9]));?"
)

# Elements whose content is text, never tags, up to their own end tag.
_RAW_TEXT_NAMES = (b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed",
                   b"noframes", b"plaintext")  # fmt: skip
_RAW_TEXT = b"|".join(_RAW_TEXT_NAMES)
_COMMENT = rb"<!--(?:[^-]++|-(?!->))*+(?:-->)?"
# What follows a tag name: everything up to the first ">" outside a quoted value.
_TAG_BODY = rb"[^>=]*+(?:=\s*+(?:\"[^\"]*+\"?|'[^']*+'?|[^\s>]*+)[^>=]*+)*+>?"
# What follows a tag name when it is at most MAX_ATTRIBUTES well-formed attributes.
_ATTRIBUTE_SYNTAX = rb"""[^\s/>=][^\s/>=]*+(?:\s*+=\s*+(?:"[^"]*+"|'[^']*+'|[^\s>]*+))?"""
_FEW_ATTRIBUTES = rb"(?:[\s/]*+%s){0,%d}+[\s/]*+>" % (_ATTRIBUTE_SYNTAX, MAX_ATTRIBUTES)


def _raw_text_after(name: bytes) -> bytes:
    return rb"(?:[^<]++|<(?!/(?i:%s)[\s/>]))*+(?:</(?i:%s)[^>]*+>?)?" % (name, name)


# Text, comments and tags within the caps, as one possessive run over the page: it stops
# only before a start tag that may be over them (or has odd syntax), which is then looked
# at on its own. An ordinary page is one call into the regex engine, linear in its length.
# (The lookahead on the raw-text names' first letters saves a fifth of the time.)
_WITHIN_CAPS = re.compile(
    rb"(?:[^<]++|<(?:" + _COMMENT[1:]
    + rb"|(?=[iInNpPsStTxX])(?:"  # the first letters of the raw-text names
    + b"|".join(rb"(?i:%s)(?=[\s/>])%s%s" % (name, _FEW_ATTRIBUTES, _raw_text_after(name))
                for name in _RAW_TEXT_NAMES)
    + rb")|[A-Za-z][^\s/>]*+" + _FEW_ATTRIBUTES
    + rb"|(?![A-Za-z]|!--)))*+"
)  # fmt: skip
# One token: a comment; a raw-text element (its start tag ``raw``, then its text up to its
# own end tag); another start tag (``tag``); or an end tag (its name, ``end``). Tokens never
# overlap, and an unterminated comment or raw-text element runs to the end of the page, as
# it does for the parser.
_TOKEN = re.compile(
    rb"%s|(?P<raw><(?P<rawname>(?i:%s))(?=[\s/>])%s)" % (_COMMENT, _RAW_TEXT, _TAG_BODY)
    + rb"(?:[^<]++|<(?!/(?i:(?P=rawname))[\s/>]))*+(?:</(?i:(?P=rawname))[^>]*+>?)?"
    + rb"|(?P<tag><[A-Za-z]%s)|</(?P<end>[A-Za-z][^\s/>]*+)[^>]*+>?" % _TAG_BODY
)
_TAG_NAME = re.compile(rb"<([^\s/>]+)")
# An attribute: (the whole of it, its name).
_ATTRIBUTE = re.compile(
    rb"""(([^\s/>=][^\s/>=]*+)(?:\s*+=\s*+(?:"[^"]*+"?|'[^']*+'?|[^\s>]*+))?)"""
)


def drop_bad_references(data: bytes) -> bytes:
    """Remove character references to characters XML cannot hold."""
    if b"&#" not in data:
        return data
    return _BAD_REFERENCE.sub(_replace_reference, data)


def _replace_reference(match: re.Match[bytes]) -> bytes:
    return b" " if match.group(1) or match.group(2) else b""  # a form feed renders as a space


def cap_tags(data: bytes) -> bytes:
    """Cap every start tag at ``MAX_ATTRIBUTES`` attributes (the first ones, plus those
    cleaning reads). Pages without such a tag come back as they are."""
    pieces: list[bytes] = []
    done = position = 0
    while True:
        run = _WITHIN_CAPS.match(data, position)  # always matches, maybe nothing
        position = run.end() if run else position
        if position >= len(data):
            break
        token = _TOKEN.match(data, position)
        if token is None:  # cannot happen: a stop is always at "<" and a letter
            position += 1
            continue
        tag = _start_tag(token)
        if tag is not None:
            attributes = _attributes(tag)
            if len(attributes) > MAX_ATTRIBUTES:
                pieces += [data[done:position], _cap_tag(tag, attributes)]
                done = position + len(tag)
        position = token.end()
    return b"".join([*pieces, data[done:]]) if pieces else data


def _start_tag(token: re.Match[bytes]) -> bytes | None:
    """The start tag of a token; None for a comment or an end tag."""
    return token["raw"] or token["tag"]


def _attributes(tag: bytes) -> list[tuple[bytes, bytes]]:
    """A start tag's attributes as (text, name), found in C (a flood has millions)."""
    name = _TAG_NAME.match(tag)
    start = name.end() if name else 1
    return _ATTRIBUTE.findall(tag, start, len(tag) - tag.endswith(b">"))


def _cap_tag(tag: bytes, attributes: list[tuple[bytes, bytes]]) -> bytes:
    """A start tag with the first ``MAX_ATTRIBUTES`` of its ``attributes``, and any later
    one that cleaning reads; a repeated name is dropped, as the parser drops it."""
    match = _TAG_NAME.match(tag)
    kept = [match.group(0) if match else b"<"]
    seen: set[bytes] = set()
    for text, attribute in attributes:
        key = attribute.lower()
        if key in seen or (len(seen) >= MAX_ATTRIBUTES and key not in MEANINGFUL_ATTRIBUTES):
            continue
        seen.add(key)
        kept.append(text)
    return b" ".join(kept) + (b">" if tag.endswith(b">") else b"")


# -- nesting

# Elements that never hold others, and start tags that close an open element of the same
# family (an <li> closes the open <li>): without them an ordinary page would look deep. As
# libxml2 parses, not as HTML5 does: it nests <wbr>, <embed>, <source> and <track>, and a
# <dd> or <dt> in another, so counting those as flat left a page of 2,047 nested <dd>s too
# deep after flattening, and everything after them was lost.
_VOID = frozenset("area base br col hr img input link meta param".split())
_CLOSED_BY = {
    "li": frozenset({"li"}),
    "tr": frozenset({"tr", "td", "th"}),
    "td": frozenset({"td", "th"}),
    "th": frozenset({"td", "th"}),
    "option": frozenset({"option"}),
}
_HIDDEN_STYLE = re.compile(rb"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# A hidden element past the limit is looked for its end tag; a page that sends us to its
# end this often without one gets no more searches (its hidden elements are kept).
_MAX_FAILED_SEARCHES = 8


@dataclass
class _Flattener:
    """State of one ``flatten_deep`` pass: the open elements, and whether each one's tags
    are kept."""

    data: bytes
    limit: int
    block_tags: frozenset[str]
    invisible_tags: frozenset[str]
    stack: list[tuple[str, bool]] = field(default_factory=list)
    failed_searches: int = 0

    def run(self) -> bytes:
        data, out, position = self.data, [], 0
        while (token := _TOKEN.search(data, position)) is not None:
            out.append(data[position : token.start()])
            position = token.end()
            start_tag, end_name = _start_tag(token), token["end"]
            if end_name is not None:
                out.append(self._end(_text(end_name), token.group(0)))
            elif start_tag is not None:
                position = self._start(token, start_tag, out)
            else:  # a comment
                out.append(token.group(0))
        out.append(data[position:])
        return b"".join(out)

    def _start(self, token: re.Match[bytes], tag: bytes, out: list[bytes]) -> int:
        """A start tag: kept, removed, or removed with its content when it hides it; returns
        where to go on from."""
        name = _name(tag)
        self._close_implied(name)
        if name in _VOID or token["raw"] is not None:  # nothing nests inside these
            out.append(token.group(0))
        elif len(self.stack) < self.limit:
            self.stack.append((name, True))
            out.append(token.group(0))
        elif name in self.invisible_tags or _hides(tag):
            end = self._matching_end(token.end(), name)
            if end is not None:  # removed with its content
                out.append(b" ")
                return end
            self.stack.append((name, True))  # kept: removing it would show what it hides
            out.append(token.group(0))
        else:
            self.stack.append((name, False))
            out.append(self._separator(name))
        return token.end()

    def _close_implied(self, name: str) -> None:
        """Pop what a start tag closes by itself: <li> an open <li>, a block an open <p>."""
        stack = self.stack
        while stack and (
            stack[-1][0] in _CLOSED_BY.get(name, ())
            or (stack[-1][0] == "p" and name in self.block_tags)
        ):
            stack.pop()

    def _end(self, name: str, tag: bytes) -> bytes:
        """An end tag closes the innermost open element of its name and those inside it;
        it is kept when that element's start tag was."""
        stack = self.stack
        for index in range(len(stack) - 1, -1, -1):
            if stack[index][0] == name:
                kept = stack[index][1]
                del stack[index:]
                return tag if kept else self._separator(name)
        return tag if len(stack) < self.limit else self._separator(name)

    def _separator(self, name: str) -> bytes:
        """What a removed tag leaves: a space for a block (its text stays a separate
        word), nothing for an inline tag."""
        return b" " if name in self.block_tags else b""

    def _matching_end(self, position: int, name: str) -> int | None:
        """Where the element whose start tag ends at ``position`` ends, counting nested
        elements of its name; None when the page ends first."""
        if self.failed_searches >= _MAX_FAILED_SEARCHES:
            return None
        depth = 1
        for token in _TOKEN.finditer(self.data, position):
            if token["end"] is not None and _text(token["end"]) == name:
                depth -= 1
                if depth == 0:
                    return token.end()
            elif token["tag"] is not None and _name(token["tag"]) == name:
                depth += 1
        self.failed_searches += 1
        return None


def flatten_deep(
    data: bytes, limit: int, block_tags: frozenset[str], invisible_tags: frozenset[str]
) -> bytes:
    """Remove the start and end tags nested deeper than ``limit``, keeping their text.

    Nesting is followed as the parser would, roughly: void elements hold nothing, raw-text
    elements hold no tags, and the end tags HTML lets a page leave out are implied. An
    element that hides its content (one of ``invisible_tags``, ``hidden``,
    ``display:none``) is never opened up: past the limit it goes with its content.
    """
    return _Flattener(data, limit, block_tags, invisible_tags).run()


def _hides(tag: bytes) -> bool:
    """Whether a start tag hides its element, as cleaning judges it."""
    for text, attribute in _attributes(tag):
        key = attribute.lower()
        if key == b"hidden" or (key == b"style" and _HIDDEN_STYLE.search(text)):
            return True
    return False


def _text(name: bytes) -> str:
    return name.decode("ascii", "replace").lower()


def _name(tag: bytes) -> str:
    match = _TAG_NAME.match(tag)
    return _text(match.group(1)) if match else ""
