"""``htmlrag-chat --docs DIR --no-web mcp`` over stdio, driven by the official SDK's client:
the user's documents are the context and the answer's sources, marked local; no page is
fetched for a server that was told to touch no network."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from tests.mcp.servers import ProgressLog, stdio_session, structured

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"


def test_documents_are_the_context_and_the_answers_sources(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(FIXTURES, folder)
    options = ["--cache", str(tmp_path / "cache.sqlite3"), "--docs", str(folder), "--no-web"]
    options += ["--reader", "extractive", "--pruner", "bm25"]

    async def scenario() -> None:
        async with stdio_session(options, tmp_path) as session:
            progress = ProgressLog()
            context = structured(
                await session.call_tool(
                    "web_context",
                    {"query": "Who planted the quince tree by the north wall?"},
                    progress_callback=progress,
                )
            )
            assert context["sources"] and all(s["local"] for s in context["sources"])
            (pdf,) = [s for s in context["sources"] if s["url"].endswith("/orchard.pdf")]
            assert pdf["url"] == (folder / "orchard.pdf").resolve().as_uri()
            assert pdf["title"] == "Orchard notes" and "Margit Halvorsen" in pdf["content"]
            assert context["left_out"] == []
            assert any(m.startswith("documents done") for m in progress.messages)
            stages = ("search (", "search done", "fetch")  # rounds are still said: "search round 1"
            assert not any(m.startswith(stages) for m in progress.messages)

            answer = structured(
                await session.call_tool(
                    "answer", {"question": "How much paraffin does the Skarvik lamp burn?"}
                )
            )
            assert "38 litres of paraffin" in answer["answer"]
            cited = {n for s in answer["sentences"] for n in s["cited"]}
            (lighthouse,) = [s for s in answer["sources"] if s["number"] in cited]
            assert lighthouse["url"].endswith("/lighthouse.html") and lighthouse["local"]

            refused = await session.call_tool(
                "page_context", {"url": "https://example.org/", "query": "anything"}
            )
            assert refused.is_error and "--no-web" in refused.content[0].text

    asyncio.run(scenario())
