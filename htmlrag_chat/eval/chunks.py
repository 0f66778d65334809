"""The chunk baselines, the usual RAG refiner: plain-text chunks ranked against the query,
the best taken until the budget is full, then put back in reading order.

Chunks hold at most ``CHUNK_WORDS`` words of whole lines (a line is one block of the page,
split when longer), never across pages: 100 words is the passage length of DPR-style
retrieval and sits between the pruner's fine (128) and typical (tens of words) blocks.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from htmlrag_chat.base.counting import TokenCounter
from htmlrag_chat.html.text import count_words

CHUNK_WORDS = 100
_SEPARATOR = "\n"


def split_chunks(text: str, max_words: int = CHUNK_WORDS) -> list[str]:
    """Pack the lines of ``text`` into chunks of at most ``max_words`` words."""
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for line in text.splitlines():
        for piece in _pieces(line, max_words):
            size = count_words(piece)
            if current and words + size > max_words:
                chunks.append(_SEPARATOR.join(current))
                current, words = [], 0
            current.append(piece)
            words += size
    if current:
        chunks.append(_SEPARATOR.join(current))
    return chunks


def _pieces(line: str, max_words: int) -> Iterator[str]:
    """A line in pieces of at most ``max_words`` words. Only a run of CJK characters (each
    one a word, no spaces between) can exceed that alone: it is cut every ``max_words``
    characters."""
    piece: list[str] = []
    words = 0
    for token in line.split():
        size = count_words(token)
        if size > max_words:
            yield from _flush(piece)
            piece, words = [], 0
            for start in range(0, len(token), max_words):
                yield token[start : start + max_words]
            continue
        if piece and words + size > max_words:
            yield from _flush(piece)
            piece, words = [], 0
        piece.append(token)
        words += size
    yield from _flush(piece)


def _flush(piece: list[str]) -> Iterator[str]:
    if piece:
        yield " ".join(piece)


def select_chunks(
    chunks: Sequence[str],
    scores: Sequence[float],
    costs: Sequence[int],
    budget: int,
    counter: TokenCounter,
) -> list[int]:
    """The best-scoring chunks that fit in ``budget`` tokens, as indices in their original
    order (``join_chunks`` makes the context of them).

    Chunks are taken best first and any that fits is kept (a long one is skipped, not the
    end of the selection), as our pruner refills its budget. The joined text is counted
    once; if BPE merges made it longer than the per-chunk sum, the worst chosen chunks go.
    """
    ranked = sorted(range(len(chunks)), key=lambda index: (-scores[index], index))
    chosen: list[int] = []
    total = 0
    for index in ranked:
        cost = costs[index] + 1  # the separator
        if total + cost <= budget:
            chosen.append(index)
            total += cost
    while chosen:
        if counter.count(join_chunks(chunks, sorted(chosen))) <= budget:
            return sorted(chosen)
        chosen.pop()
    return []


def join_chunks(chunks: Sequence[str], chosen: Sequence[int]) -> str:
    """The context of the ``chosen`` chunks, in the order given."""
    return _SEPARATOR.join(chunks[index] for index in chosen)
