"""The MCP ``research`` tool over stdio, driven by the official SDK's client: the parts
researched from the user's documents, one report whose structured record the client checks
against the tool's output schema, and the report kept as a conversation."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from tests.mcp.servers import ProgressLog, stdio_session, structured

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
SWARM = "Who caught the swarm from the blue hive?"
PARAFFIN = "How much paraffin does the Skarvik lamp burn a week in winter?"


def test_research_reports_each_part_from_its_file(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    shutil.copytree(FIXTURES, folder)
    options = ["--cache", str(tmp_path / "cache.sqlite3"), "--docs", str(folder), "--no-web"]
    options += ["--reader", "extractive", "--pruner", "bm25"]

    async def scenario() -> None:
        async with stdio_session(options, tmp_path) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["research"].output_schema and tools["research"].description
            progress = ProgressLog()
            result = await session.call_tool(
                "research",
                {"question": "The swarm and the lamp?", "parts": [SWARM, PARAFFIN]},
                progress_callback=progress,
            )
            report = structured(result)
            assert [part["state"] for part in report["parts"]] == ["answered", "answered"]
            by_number = {ref["number"]: ref["url"] for ref in report["references"]}
            for part, (fact, file) in zip(
                report["parts"],
                [("Orla Vance", "beekeeping.md"), ("38 litres", "lighthouse.html")],
                strict=True,
            ):
                assert fact in part["answer"]
                cited = {n for s in part["sentences"] for n in s["corrected"] or s["cited"]}
                assert {by_number[n].rsplit("/", 1)[-1] for n in cited} == {file}
            assert report["parts_given"] and report["conversation_id"] is not None
            text = result.content[0].text
            assert "Orla Vance" in text and "References:" in text
            assert any(m.startswith("part 2/2 answered") for m in progress.messages)
            kept = await session.read_resource(
                f"htmlrag-chat://conversations/{report['conversation_id']}"
            )
            assert "### 2. How much paraffin" in kept.contents[0].text

            refused = await session.call_tool(
                "research", {"question": "Q", "parts": [f"Q{n}?" for n in range(6)]}
            )
            assert refused.is_error and "at most 5" in refused.content[0].text

    asyncio.run(scenario())
