"""Benchmark downloads and the cache on loopback, with pages of the shared corpus.

- throughput: 200 corpus pages served by a local aiohttp server, fetched through the real
  fetcher (and recorded into a fresh cache), with no added latency and with 100 ms per page;
- cache-hit latency: one question's inputs (a search and its 10 pages) answered from the
  cache in replay mode, median of 50 rounds;
- database size per recorded page.

Only 127.0.0.1 is ever contacted. Writes bench/results/web_store.json.
"""

from __future__ import annotations

import asyncio
import json
import platform
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from aiohttp import web

from benchlib import argument_parser, quantiles
from htmlrag_chat.sources.recorder import WebRecorder
from htmlrag_chat.store.db import Store
from htmlrag_chat.web.fetch import Fetcher, FetchPolicy
from htmlrag_chat.web.results import Outcome, SearchResult

PAGES = 200
QUESTION_PAGES = 10


async def serve(pages: dict[str, bytes], latency: float) -> web.AppRunner:
    async def page(request: web.Request) -> web.Response:
        if latency:
            await asyncio.sleep(latency)
        return web.Response(body=pages[request.match_info["name"]], content_type="text/html")

    app = web.Application()
    app.router.add_get("/{name}", page)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner


async def throughput(
    pages: dict[str, bytes], latency: float, cache: Path
) -> tuple[dict[str, float], list[str]]:
    """Fetch and record every page once; the figures and the URLs that came back OK."""
    runner = await serve(pages, latency)
    port = runner.addresses[0][1]
    urls = [f"http://127.0.0.1:{port}/{name}" for name in pages]
    try:
        with Store.open(cache) as store:
            recorder = WebRecorder(store, fetcher=Fetcher(FetchPolicy(allow_private=True)))
            start = time.perf_counter()
            results = await recorder.fetch_many(urls)
            seconds = time.perf_counter() - start
            size = store.stats()["bytes"]
    finally:
        await runner.cleanup()
    ok = [result.url for result in results if result.outcome is Outcome.OK]
    return {
        "latency_ms": latency * 1000,
        "pages": len(urls),
        "ok": len(ok),
        "outcomes": dict(Counter(result.outcome.value for result in results)),
        "seconds": round(seconds, 3),
        "pages_per_s": round(len(urls) / seconds, 1),
        "db_bytes_per_page": round(size / len(urls)),
        "page_bytes_mean": round(statistics.fmean(len(body) for body in pages.values())),
    }, ok


async def cache_hits(cache: Path, urls: list[str], rounds: int = 50) -> dict[str, float]:
    with Store.open(cache) as store:
        store.put_search("a question", [SearchResult(url, url) for url in urls])
    timings = []
    with Store.open(cache, readonly=True) as store:
        recorder = WebRecorder(store, replay=True)
        for _ in range(rounds):
            start = time.perf_counter()
            results = await recorder.search("a question")
            pages = await recorder.fetch_many([result.url for result in results])
            timings.append((time.perf_counter() - start) * 1000)
            assert all(page.outcome is Outcome.OK for page in pages)
    return {"pages": len(urls), "ms": quantiles(timings)}


async def run(corpus: Path) -> dict[str, object]:
    files = sorted((corpus / "pages").glob("*.html"))[:PAGES]
    pages = {file.stem: file.read_bytes() for file in files}
    with tempfile.TemporaryDirectory() as folder:
        fast, ok = await throughput(pages, 0.0, Path(folder) / "fast.sqlite3")
        slow, _ = await throughput(pages, 0.1, Path(folder) / "slow.sqlite3")
        hits = await cache_hits(Path(folder) / "fast.sqlite3", ok[:QUESTION_PAGES])
    return {"throughput": [fast, slow], "cache_hit": hits}


def main() -> int:
    parser = argument_parser(__doc__, "web_store.json")
    args = parser.parse_args()
    report = {
        "machine": f"{platform.machine()}, Python {platform.python_version()}, loopback only",
        **asyncio.run(run(args.corpus)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
