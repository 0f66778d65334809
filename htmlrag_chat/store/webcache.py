"""The web cache: searches, pages, derived artefacts (by content hash) and embeddings.

Everything here can be fetched or computed again, so ``Store.clear`` may drop it all;
the conversations (``conversations.py``) live beside it in the same file and stay.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict

import numpy as np

from htmlrag_chat.store.connection import Connection
from htmlrag_chat.store.rows import BadRow, fetch_result, search_results
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult

_VECTOR = np.dtype("<f4")  # little-endian float32, so a cache file moves between machines
_KEYS_PER_QUERY = 500  # below SQLite's limit on bound parameters


class WebCache(Connection):
    """The cache tables of the store; ``Store`` gives them their connection."""

    # -- searches

    def put_search(
        self,
        query: str,
        results: Sequence[SearchResult],
        *,
        region: str = "",
        safesearch: str = "",
        backend: str = "",
    ) -> None:
        record = {
            "query": query,
            "region": region,
            "safesearch": safesearch,
            "backend": backend,
            "results": json.dumps([asdict(result) for result in results], ensure_ascii=False),
            "searched_at": time.time(),
        }
        with self.transaction():
            self._db.table("searches").upsert(record, pk=("query", "region", "safesearch"))

    def get_search(
        self,
        query: str,
        *,
        region: str | None = "",
        safesearch: str | None = "",
        backend: str | None = None,
        max_age: float | None = None,
    ) -> list[SearchResult] | None:
        """The results last stored for these settings, newest first; None if missing or older
        than ``max_age``. None as a setting matches any value (a replay takes what was
        recorded), and a search stored without settings (an imported recording: the exchange
        format carries none) matches any settings, so it answers in record mode too.
        ``backend`` is the backends and filters a search was made with
        (``SearchSettings.cache_key``); a search made with others is not these results."""
        rows = self._rows(
            "SELECT results, searched_at FROM searches WHERE query = ?"
            " AND ((region = '' AND safesearch = '')"
            " OR ((? IS NULL OR region = ?) AND (? IS NULL OR safesearch = ?)"
            " AND (? IS NULL OR backend = ?)))"
            " ORDER BY searched_at DESC, rowid DESC LIMIT 1",
            [query, region, region, safesearch, safesearch, backend, backend],
        )
        if not rows or _expired(rows[0]["searched_at"], max_age):
            return None
        try:
            return search_results(rows[0]["results"])
        except BadRow as bad:
            self.skip_row(f"the search {query!r}", bad)
            return None

    def searches(self) -> list[tuple[str, list[SearchResult]]]:
        """Every stored search as (query, results), oldest first (recordings export these)."""
        rows = self._rows("SELECT query, results FROM searches ORDER BY searched_at, rowid")
        found = []
        for row in rows:
            try:
                found.append((str(row["query"]), search_results(row["results"])))
            except BadRow as bad:
                self.skip_row(f"the search {row['query']!r}", bad)
        return found

    def recent_queries(self, limit: int) -> list[str]:
        """The queries of the ``limit`` searches stored last, newest first: what a
        recording can answer, for the chat app to name."""
        rows = self._rows(
            "SELECT query FROM searches ORDER BY searched_at DESC, rowid DESC LIMIT ?", [limit]
        )
        return [str(row["query"]) for row in rows]

    # -- pages

    def put_page(self, result: FetchResult) -> None:
        """Store a download's outcome. A failure never replaces a good page: a site that is
        down for a moment must not cost the cache a page it had (checked inside the one
        statement, so two writers cannot race past it)."""
        record = asdict(result)
        del record["from_cache"], record["transient"]
        record["outcome"] = result.outcome.value
        record["headers"] = json.dumps(result.headers, ensure_ascii=False)
        updates = ", ".join(f"{column} = excluded.{column}" for column in record if column != "url")
        with self.transaction():
            self._db.execute(
                f"INSERT INTO pages ({', '.join(record)}) VALUES ({', '.join('?' * len(record))})"
                f" ON CONFLICT (url) DO UPDATE SET {updates}"
                " WHERE excluded.outcome = ? OR pages.outcome != ?",
                [*record.values(), Outcome.OK.value, Outcome.OK.value],
            )

    def get_page(self, url: str, *, max_age: float | None = None) -> FetchResult | None:
        """The page stored for this requested URL; None if missing or older than ``max_age``."""
        rows = self._rows("SELECT * FROM pages WHERE url = ?", [url])
        if not rows or _expired(rows[0]["fetched_at"], max_age):
            return None
        try:
            return fetch_result(rows[0])
        except BadRow as bad:
            self.skip_row(f"the page {url}", bad)
            return None

    # -- derived artefacts (cleaned HTML and the like), by content hash

    def put_derived(self, kind: str, key: str, value: bytes) -> None:
        record = {"kind": kind, "key": key, "value": value, "created_at": time.time()}
        with self.transaction():
            self._db.table("derived").upsert(record, pk=("kind", "key"))

    def get_derived(self, kind: str, key: str) -> bytes | None:
        rows = self._rows("SELECT value FROM derived WHERE kind = ? AND key = ?", [kind, key])
        return rows[0]["value"] if rows else None

    # -- embeddings (the scoring.embed.EmbeddingCache protocol): 1-D float32 vectors

    def get_many(self, model: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), _KEYS_PER_QUERY):
            chunk = list(keys[start : start + _KEYS_PER_QUERY])
            marks = ", ".join("?" * len(chunk))
            rows = self._rows(
                f"SELECT key, vector FROM embeddings WHERE model = ? AND key IN ({marks})",
                [model, *chunk],
            )
            for row in rows:
                found[row["key"]] = np.frombuffer(row["vector"], dtype=_VECTOR).astype(np.float32)
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        records = [
            {"model": model, "key": key, "vector": np.asarray(vector, dtype=_VECTOR).tobytes()}
            for key, vector in vectors.items()
        ]
        with self.transaction():
            self._db.table("embeddings").upsert_all(records, pk=("model", "key"))


def _expired(stored_at: float, max_age: float | None) -> bool:
    return max_age is not None and time.time() - stored_at > max_age
