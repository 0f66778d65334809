"""What search and download produce: plain records the store keeps and replays."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str = ""
    snippet: str = ""


def interleave(lists: Sequence[Sequence[SearchResult]]) -> list[SearchResult]:
    """Several queries' results as one list, rank by rank (each query's best first), each
    URL once."""
    seen: set[str] = set()
    merged = []
    for rank in range(max(map(len, lists), default=0)):
        for results in lists:
            if rank < len(results) and results[rank].url not in seen:
                seen.add(results[rank].url)
                merged.append(results[rank])
    return merged


class Outcome(StrEnum):
    """How a download ended; only OK pages become sources."""

    OK = "ok"
    SKIPPED = "skipped"  # fetched, but not a page we read (PDF, image, too large)
    FAILED = "failed"  # network or HTTP error
    BLOCKED = "blocked"  # refused before connecting (private address, bad scheme)
    CHALLENGE = "challenge"  # a bot challenge or a JavaScript-only shell: no readable text


@dataclass(frozen=True)
class FetchResult:
    """The outcome of downloading one URL, as recorded in the cache."""

    url: str
    outcome: Outcome
    reason: str | None = None  # why, for anything but OK (one line, for users)
    final_url: str | None = None
    status: int | None = None
    content_type: str | None = None
    charset: str | None = None  # from the Content-Type header, if any
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # the page bytes for OK and CHALLENGE, else None
    bytes: int = 0
    ms: float = 0.0
    fetched_at: float = 0.0  # Unix time
    from_cache: bool = False
    # A failure that may not happen again (a timeout, a reset, a 5xx, a 429): never kept in
    # the cache, so the next request tries again. Never set for any other outcome.
    transient: bool = False

    def summary(self) -> dict[str, object]:
        """Everything but the body and headers, JSON-ready (``htmlrag-chat fetch`` prints it)."""
        record = asdict(self)
        del record["body"], record["headers"]
        record["outcome"] = self.outcome.value
        return record
