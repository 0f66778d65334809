"""Lexical matching, the one home of BM25: its maths and plain terms here, terms analysed
per language in ``lexical.analysis`` (with ``lexical.language``, which tells the language).

Shared by the BM25 block scorer (``scoring/bm25.py``), the fused stage, the evidence check,
the documents source and the extractive reader, which ranks a source's sentences the same
way. It sits below both the scorers and the readers, beside the HTML core it takes its CJK
ranges from, so a reader never imports a scorer.

Terms are casefolded word characters split at punctuation; CJK text is split per character,
since those scripts do not separate words with spaces.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from htmlrag_chat.html.text import CJK

_WORD = re.compile(r"[^\W_]+")


def terms(text: str) -> list[str]:
    """BM25 terms of a text: casefolded words, CJK characters one by one."""
    return _WORD.findall(CJK.sub(r" \g<0> ", text.casefold()))


def bm25_scores(query: str, texts: list[str], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 of each text for the query on plain terms, the texts themselves being the
    collection (the sentences an extractive reader chooses from, the chunk baseline)."""
    return bm25(terms(query), [terms(text) for text in texts], k1, b)


def bm25(query: list[str], texts: list[list[str]], k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 of each term list for the query's terms, the lists being the collection; the
    pruners give it terms analysed per language (``lexical.analysis``)."""
    return sum_by_text(bm25_by_term(query, texts, k1, b), len(texts))


def bm25_by_term(
    query: list[str], texts: list[list[str]], k1: float = 1.5, b: float = 0.75
) -> dict[str, list[float]]:
    """Each query term's share of every text's BM25 (terms no text holds left out): what a
    caller that asks which words matched needs, at the cost of one ``bm25``."""
    documents = [Counter(terms) for terms in texts]
    lengths = [sum(counts.values()) for counts in documents]
    return counted_bm25_by_term(query, documents, lengths, k1, b)


def counted_bm25_by_term(
    query: list[str],
    documents: Sequence[Mapping[str, int]],
    lengths: Sequence[int],
    k1: float = 1.5,
    b: float = 0.75,
) -> dict[str, list[float]]:
    """``bm25_by_term`` from each text's term counts and length, for a caller that keeps
    them (the cache's local documents: the counts of the query's terms are enough)."""
    query_terms = set(query)
    if not documents or not query_terms:
        return {}
    average = sum(lengths) / len(lengths) or 1.0
    n = len(documents)
    idf = {
        term: math.log(1 + (n - df + 0.5) / (df + 0.5))
        for term in sorted(query_terms)
        if (df := sum(1 for counts in documents if term in counts))
    }
    norms = [k1 * (1 - b + b * length / average) for length in lengths]
    return {
        term: [
            weight * counts[term] * (k1 + 1) / (counts[term] + norm) if term in counts else 0.0
            for counts, norm in zip(documents, norms, strict=True)
        ]
        for term, weight in idf.items()
    }


def sum_by_text(shares: dict[str, list[float]], texts: int) -> list[float]:
    """Each text's total of ``bm25_by_term`` shares."""
    totals = [0.0] * texts
    for column in shares.values():
        for index, share in enumerate(column):
            totals[index] += share
    return totals
