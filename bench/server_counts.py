"""Token counts asked of a real llama-cpp-python server, as pruning asks them: a new
connection for every count (a counter of its own for each, as the counter asked before)
against ``ServerTokenCounter``'s one kept connection. The texts are the blocks of
the demo recording's pages (sentences, rows, items), each counted once, as the counter
remembers them.

    .venv/bin/python bench/server_counts.py   # SmolLM2 from `make venv`; seconds
"""

from __future__ import annotations

import gzip
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchlib import ROOT, write_report
from htmlrag_chat.html.passages import passages
from htmlrag_chat.reader.window import ServerTokenCounter, token_route
from tests.smollm2 import ALIAS, llama_server

REPEATS = 5


def main() -> None:
    texts = _blocks()
    fresh_s: list[float] = []
    kept_s: list[float] = []
    with tempfile.TemporaryDirectory() as folder, llama_server(Path(folder)) as server:
        route = token_route(server.base_url)
        assert route is not None
        for _ in range(REPEATS):  # alternated, so that load drifts alike on both
            start = time.perf_counter()
            fresh = [ServerTokenCounter(server.base_url, ALIAS, route).count(t) for t in texts]
            fresh_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            kept = ServerTokenCounter(server.base_url, ALIAS, route).count_many(texts)
            kept_s.append(time.perf_counter() - start)
            assert fresh == kept
    write_report(
        ROOT / "bench" / "results" / "server_counts.json",
        {
            "server": "llama-cpp-python (llama_cpp.server), SmolLM2-135M, 127.0.0.1",
            "machine": f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            "date": time.strftime("%Y-%m-%d"),
            "texts": len(texts),
            "repeats": REPEATS,
            "new_connection_each_s": [round(s, 3) for s in fresh_s],
            "one_kept_connection_s": [round(s, 3) for s in kept_s],
            "ms_a_count_median": {
                "new_each": round(1000 * statistics.median(fresh_s) / len(texts), 2),
                "kept": round(1000 * statistics.median(kept_s) / len(texts), 2),
            },
        },
    )


def _blocks() -> list[str]:
    """The distinct passages of the demo recording's pages."""
    seen: dict[str, None] = {}
    with gzip.open(ROOT / "demo" / "recording.jsonl.gz", "rt", encoding="utf-8") as lines:
        for line in lines:
            for result in json.loads(line).get("results") or []:
                if isinstance(result.get("html"), str):
                    for passage in passages(1, result["html"]):
                        seen.setdefault(passage.text, None)
    return [text for text in seen if text.strip()]


if __name__ == "__main__":
    main()
