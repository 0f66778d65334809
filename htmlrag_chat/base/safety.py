"""Text from the web (and from models that read it) is data: it must not drive the user's
terminal, nor the programs and models that read what we print or store.

``terminal_safe`` removes what a terminal or a text renderer treats as commands rather than
characters: C0 controls but tab and newline (ESC starts every escape sequence), DEL, C1
controls (U+009B is a one-character CSI on some terminals), the bidirectional overrides and
isolates that make displayed text read differently from what it is, and Unicode tag
characters (invisible, a known way to hide instructions for a model) outside the emoji
flags that use them. A lone UTF-16 surrogate, which no terminal or file can encode, becomes
U+FFFD (``received.whole_text``; text is made whole where it comes in, this is the net).

``text_safe`` is what every path that prints or keeps text from a page or a model goes
through (``ask``'s answer and sources, ``clean`` and ``prune`` output, ``--json``, the
cache): on top of that, chat-template control tokens (``<|eot_id|>``, ``<|im_start|>``,
DeepSeek's full-width ``<\uff5c...\uff5c>``, the named ones of ``base/specials.py`` such as
Gemma's ``<start_of_turn>`` and Mistral's ``[INST]``, and their HTML-escaped forms) are
broken up so that no later model reads them as tokens. ``SafeStream`` does the same for text
that arrives in pieces (a token may be cut between two). ``markdown_safe`` also drops the
links of stored Markdown that a renderer could follow somewhere other than a web page
(``[1](javascript:...)``), and ``no_raw_html`` makes the raw HTML a Markdown renderer would
pass through (``<img onerror=...>``, ``<iframe>``, comments) text: ``&lt;img ...``.
``safe_url`` percent-encodes what has no place in a URL, which
keeps the URL pointing at the same page. Letters of every script, accents and emoji are
untouched.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from htmlrag_chat.base.received import whole_text
from htmlrag_chat.base.specials import ANGLE_TOKENS, BRACKET_TOKENS

_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# Tag characters, but an emoji flag of a region (black flag, a subdivision code such as
# "gbsct" in tag letters and digits, cancel tag): nothing longer can hide behind a flag.
_TAG_CHARACTERS = re.compile(
    "(\U0001f3f4[\U000e0061-\U000e007a]{2}[\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,4}"
    "\U000e007f)|[\U000e0000-\U000e007f]+"
)
_CONTROL_TOKEN = re.compile(
    "(<|&lt;)([|\uff5c])([^|\uff5c<>&\n]{1,64})([|\uff5c])(>|&gt;)"
    f"|(<|&lt;)(/?(?:{'|'.join(sorted(ANGLE_TOKENS, key=len, reverse=True))}))(>|&gt;)"
    f"|(\\[)(/?(?:{'|'.join(sorted(BRACKET_TOKENS, key=len, reverse=True))}))(\\])"
    "|(<<|&lt;&lt;)(/?SYS)(>>|&gt;&gt;)",
    re.IGNORECASE,
)
# A control token is at most this long; a stream holds back no more than that.
_LONGEST_TOKEN = 80
_OPENER = re.compile("[<\\[&]")
# Links a Markdown renderer may follow: to web pages and mail addresses only.
_LINK_SCHEMES = frozenset({"http", "https", "mailto"})
_LINK = re.compile(
    r"(!?\[[^\]\n]*\])\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?\s*\)"
)
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}:[^\s<>]*)>")
_DEFINITION = re.compile(r"^ {0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)[^\n]*$", re.MULTILINE)
_SCHEME = re.compile(r"([a-z][a-z0-9+.\-]*):")
_NOT_IN_SCHEME = re.compile(r"[\x00-\x20\x7f]|\\(?=[!-/:-@\[-`{-~])")
# In a URL: controls, whitespace, invisible formatting (zero-width characters, bidi marks
# and overrides, tag characters) and the ASCII characters RFC 3986 never allows raw.
_URL_UNSAFE = re.compile(
    "[\x00-\x20\x7f-\xa0\u00ad\u061c\u1680\u180e\u2000-\u200f\u2028-\u202f\u205f-\u2064"
    '\u2066-\u206f\u3000\ufeff\U000e0000-\U000e007f<>"`{}|\\\\^]'
)


def terminal_safe(text: str) -> str:
    return _TAG_CHARACTERS.sub(_keep_flags, _UNSAFE.sub("", whole_text(text)))


def _keep_flags(match: re.Match[str]) -> str:
    return match.group(1) or ""


def defuse_control_tokens(text: str) -> str:
    """``<|eot_id|>`` -> ``< |eot_id| >``, ``<start_of_turn>`` -> ``< start_of_turn >``,
    ``[INST]`` -> ``[ INST ]``: still readable, never a token."""
    return _CONTROL_TOKEN.sub(_defuse, text)


def _defuse(match: re.Match[str]) -> str:
    pieces = [piece for piece in match.groups() if piece is not None]
    return f"{pieces[0]} {''.join(pieces[1:-1])} {pieces[-1]}"


def text_safe(text: str) -> str:
    """Web text as data: terminal-safe, with control tokens defused."""
    return defuse_control_tokens(terminal_safe(text))


@dataclass
class SafeStream:
    """``text_safe`` for text that arrives in pieces (a streamed answer): the possible start
    of a control token at the end of a piece waits for the next one, at most the length of
    the longest token, so that ``<|eot`` + ``_id|>`` is caught like ``<|eot_id|>``."""

    pending: str = ""

    def feed(self, text: str) -> str:
        text = self.pending + text
        escaped = text.rfind("&gt;")
        closed = max(text.rfind(">"), text.rfind("]"), escaped + 3 if escaped >= 0 else -1) + 1
        opener = _OPENER.search(text, max(closed, len(text) - _LONGEST_TOKEN))
        cut = opener.start() if opener else len(text)
        self.pending = text[cut:]
        return text_safe(text[:cut])

    def finish(self) -> str:
        text, self.pending = self.pending, ""
        return text_safe(text)


def markdown_safe(text: str) -> str:
    """Markdown from a model, as kept and exported: ``text_safe``, and a link to anything
    but a web page or a mail address (``javascript:``, ``data:``, ``file:``, however
    spelled) loses its target; its text stays."""
    text = _LINK.sub(lambda m: m[1] if _unsafe_target(m[2]) else m[0], text_safe(text))
    text = _AUTOLINK.sub(lambda m: m[1] if _unsafe_target(m[1]) else m[0], text)
    return _DEFINITION.sub(lambda m: "" if _unsafe_target(m[1]) else m[0], text)


# Where raw HTML starts in CommonMark: a tag, a closing tag, a comment, a declaration, CDATA
# or a processing instruction; an HTML block starts the same way.
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)")
_ESCAPE_OR_CODE = re.compile(r"\\[!-/:-@\[-`{-~]|`+")


def no_raw_html(text: str) -> str:
    """Markdown with every ``<`` that could start raw HTML written ``&lt;``, outside code:
    fenced code blocks opened at the margin and code spans, which a renderer never reads as
    HTML, keep theirs. Where code spans are is the renderer's call (a backtick pairs with one
    lines away, a link's destination holds one), so the result is read back with a
    CommonMark parser: if any raw HTML is still there, every such ``<`` is escaped, code or
    not (code then shows ``&lt;``: never live markup)."""
    escaped = _outside_code(text)
    return escaped if not _has_raw_html(escaped) else _HTML_START.sub("&lt;", text)


def _has_raw_html(markdown: str) -> bool:
    """Whether a CommonMark renderer (markdown-it, Textual's and Rich's parser) finds raw
    HTML in ``markdown``."""
    if "<" not in markdown:
        return False
    from markdown_it import MarkdownIt

    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "html_block" or any(
            child.type == "html_inline" for child in token.children or []
        ):
            return True
    return False


def _outside_code(text: str) -> str:
    """``<`` escaped outside fenced code and code spans, as far as one line shows them."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is not None:
            if re.fullmatch(rf" {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}[ \t]*", line):
                fence = None
            out.append(line)
            continue
        opened = _FENCE.fullmatch(line)
        if opened and not (opened[1][0] == "`" and "`" in opened[2]):
            fence = opened[1]
            out.append(line)
            continue
        out.append(_escaped_line(line))
    return "\n".join(out)


def _escaped_line(line: str) -> str:
    """One line outside fenced code: ``<`` escaped but in its code spans and where a
    backslash already escapes it."""
    pieces: list[str] = []
    done = 0
    for match in _ESCAPE_OR_CODE.finditer(line):
        if match.start() < done:
            continue
        pieces.append(_HTML_START.sub("&lt;", line[done : match.start()]))
        run = match[0]
        if run.startswith("\\"):
            pieces.append(run)
            done = match.end()
            continue
        closing = re.compile(rf"(?<!`){run}(?!`)").search(line, match.end())
        end = closing.end() if closing else match.end()
        pieces.append(line[match.start() : end])
        done = end
    pieces.append(_HTML_START.sub("&lt;", line[done:]))
    return "".join(pieces)


def _unsafe_target(target: str) -> bool:
    """Whether a link target names a scheme other than http(s) or mailto, read as a
    renderer reads it (entities decoded, escapes, whitespace and controls ignored)."""
    plain = _NOT_IN_SCHEME.sub("", html.unescape(target.strip("<>"))).lower()
    scheme = _SCHEME.match(plain)
    return scheme is not None and scheme[1] not in _LINK_SCHEMES


def one_line(text: str) -> str:
    """Web text for a one-line place (a title, a list entry): safe, whitespace collapsed."""
    return " ".join(text_safe(text).split())


def safe_url(url: str) -> str:
    """A URL with the characters that could hide or fake part of it percent-encoded."""
    return _URL_UNSAFE.sub(_percent_encode, url.strip())


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group(0).encode("utf-8"))


def json_safe(value: Any) -> Any:
    """A JSON-ready value with ``text_safe`` applied to every string in it."""
    if isinstance(value, str):
        return text_safe(value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value
