"""Claims in words, the same for every face: the terminal under the answer, the chat app, the
exported conversation, and the flag lines every face shows.

A quote is cut to the part of its passage that shares the sentence's words, with "…" where
it was cut, so that it reads at a glance ("…the Attention Correction feature uses ARKit to
grab a depth map…"); a quote the checker found for a sentence that cited nothing says so,
and a sentence no source it cites backs is shown, marked, with each one's closest passage.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from htmlrag_chat.evidence.claims import Claim, Quote

QUOTE_CHARS = 160  # the longest quote shown; the whole passage is in --json
SENTENCE_CHARS = 100
_WORD = re.compile(r"[^\W_]{3,}")  # words that say what a quote is about


def shorten(text: str, limit: int = SENTENCE_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def excerpt(quote: str, sentence: str, limit: int = QUOTE_CHARS) -> str:
    """The ``limit`` characters of ``quote`` (cut between words) that hold most of the
    sentence's words, "…" marking each cut."""
    if len(quote) <= limit:
        return quote
    wanted = {word.casefold() for word in _WORD.findall(sentence)}
    starts = [0] + [match.end() for match in re.finditer(r" ", quote)]
    best, best_start = -1, 0
    for start in starts:
        window = quote[start : start + limit]
        hits = sum(word.casefold() in wanted for word in _WORD.findall(window))
        if hits > best:
            best, best_start = hits, start
    window = quote[best_start : best_start + limit]
    if best_start + limit < len(quote):
        window = window.rsplit(" ", 1)[0] + "…"
    return ("…" if best_start else "") + window.strip()


def quote_line(quote: Quote, sentence: str) -> str:
    """``[3] "…the words…"``; a quote the checker added says so, and so does the closest
    passage of a source that does not back its sentence."""
    said = " added by the checker:" if quote.added else ""
    if not quote.backs:
        said = " closest passage, not backing it:"
    return f'[{quote.source}]{said} "{excerpt(quote.text, sentence)}"'


def problem(claim: Claim) -> str:
    """What it cites, and why that does not back it: the numbers none of its sources has,
    or its best score; and the source that does back it, where the checker found one."""
    if claim.cited:
        cites = f"cites {_numbers(claim.cited)}, but "
        where = "it" if len(claim.cited) == 1 else "any of them"
    else:
        cites, where = "cites nothing, and ", "any source"
    if claim.looped:
        return f"{cites}it says the same words over and over (the reader looped)"
    if claim.missing:
        which = ", ".join(claim.missing)
        why = f"{cites}{which} {'is' if len(claim.missing) == 1 else 'are'} not in {where}"
    elif claim.judged is not None:
        why = f"{cites}{where} does not state it (asked, the reader says no: {claim.judged:.2f})"
    else:
        why = f"{cites}no passage of {where} backs it (support {claim.support:.2f})"
    for quote in claim.elsewhere:
        why += f"; [{quote.source}] does"
    return why


def flag_lines(claims: Sequence[Claim]) -> list[str]:
    """One line per unsupported sentence, for the notice under the answer."""
    return [
        f'unsupported: "{shorten(claim.sentence)}" {problem(claim)}'
        for claim in claims
        if not claim.supported
    ]


def correction_lines(claims: Sequence[Claim]) -> list[str]:
    """One line per citation the checker corrected (``evidence.correction``): what the
    model cited, and the source that backs the sentence instead."""
    lines = []
    for claim in claims:
        if not claim.corrected:
            continue
        now = _numbers(claim.corrected)
        if claim.cited:
            why = f"cited {_numbers(claim.cited)}, which does not back it; {now} does"
        else:
            why = f"cited nothing; {now} backs it"
        lines.append(f'corrected: "{shorten(claim.sentence)}" {why}')
    return lines


def shown_quotes(claim: Claim) -> tuple[Quote, ...]:
    """The quotes worth showing under a sentence: those that back it; for a sentence that
    cites sources none of which backs it, each one's closest passage (sharing any of its
    words), so that a person judges the flag by the source's own words ("beta 3" where the
    sentence says "beta 7"; the right passage, where the words missed a paraphrase), then
    the passage of another source that backs it, where the checker found one. Never a
    passage the sentence already is, word for word (the extractive reader's, a copied one)."""
    if claim.supported:
        quotes = claim.backing
    elif claim.looped:
        quotes = ()
    else:
        quotes = tuple(
            quote for quote in claim.quotes if quote.score > 0 and (quote.backs or not quote.added)
        )
    said = _plain(claim.sentence)
    return tuple(quote for quote in quotes if _plain(quote.text) != said)


def evidence_lines(claims: Sequence[Claim]) -> list[str]:
    """Each sentence with quotes to show, marked when no source backs it, then its quotes,
    indented."""
    lines = []
    for claim in claims:
        quotes = shown_quotes(claim)
        if quotes:
            lines.append(f"- {sentence_line(claim)}")
            lines += [f"  {quote_line(quote, claim.sentence)}" for quote in quotes]
    return lines


def sentence_line(claim: Claim) -> str:
    """The sentence as it heads its quotes, marked when no source backs it."""
    return shorten(claim.sentence) + ("" if claim.supported else " (unsupported)")


def _plain(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _numbers(cited: Sequence[int]) -> str:
    return f"[{', '.join(map(str, cited))}]"
