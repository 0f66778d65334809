"""What counts as kept: normalized text found in the visible text of a context.

Normalization is SQuAD's, as HtmlRAG's appendix C uses it for "the answer survives pruning":
lowercase, drop punctuation and the English articles, collapse whitespace. Matching is by
substring, as there, so a snippet cut mid-word still matches the page it was cut from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from htmlrag_chat.html.dom import parse
from htmlrag_chat.html.text import visible_text

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")

# SQuAD drops ASCII punctuation (its set includes $, % and _); we drop every character
# that is neither a word character nor a space, so that « », „ “, 、 and € go as well.
_PUNCTUATION = re.compile(r"[^\w\s]|_")


def normalize(text: str) -> str:
    """SQuAD normalization: lowercase, no punctuation, no articles, single spaces."""
    text = _PUNCTUATION.sub("", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def html_text(html: str) -> str:
    """The visible text of HTML that may hold several pages.

    Pages are serialized one ``<html>`` element after another; parsed as they are, the parser
    keeps only the first page's body and drops the rest. Inside a wrapper element the
    repeated ``<html>``, ``<head>`` and ``<body>`` tags are ignored and every page's content
    is kept, in order.
    """
    return visible_text(parse(f"<div>{html}</div>"))


def kept(phrases: Iterable[str], text: str) -> int:
    """How many of ``phrases`` occur in ``text`` once both are normalized."""
    haystack = normalize(text)
    return sum(1 for phrase in phrases if (needle := normalize(phrase)) and needle in haystack)


def answer_present(answers: Iterable[str], text: str) -> bool:
    """Whether any gold answer occurs in ``text`` (HtmlRAG's appendix C measure)."""
    return kept(answers, text) > 0
