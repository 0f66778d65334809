"""The search settings as the web code uses them: one field per setting of the ``[search]``
section of the settings tree (``settings/tree.py``), which holds their defaults, checks and
help. API keys are ``repr=False``, so no error, log or recording shows them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from htmlrag_chat.settings.tree import default


@dataclass(frozen=True)
class SearchSettings:
    backends: tuple[str, ...] = default("search.backends")
    searxng_url: str | None = default("search.searxng_url")
    proxy: str | None = default("search.proxy")
    site: tuple[str, ...] = default("search.site")
    exclude_site: tuple[str, ...] = default("search.exclude_site")
    time: str | None = default("search.time")
    region: str = default("search.region")
    safesearch: str = default("search.safesearch")
    max_results: int = default("search.max_results")
    timeout: int = default("search.timeout")
    retries: int = default("search.retries")
    backoff: float = default("search.backoff")
    # The engines' keys, declared with them (``web/engines.py``: a key's default is none).
    brave_api_key: str | None = field(default=None, repr=False)
    tavily_api_key: str | None = field(default=None, repr=False)

    def cache_key(self) -> str:
        """What the cache keys a search by besides query, region and safesearch: the backends
        and the filters (with none, the backends alone, as stored before filters existed)."""
        filters = [f"site={s}" for s in self.site] + [f"-site={s}" for s in self.exclude_site]
        if self.time:
            filters.append(f"time={self.time}")
        return "|".join([",".join(self.backends), *filters])
