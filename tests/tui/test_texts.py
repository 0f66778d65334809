"""The chat app's words for what a question reads, for each mix of sources."""

from __future__ import annotations

import pytest

from htmlrag_chat.assembly.wiring import AgentOptions
from htmlrag_chat.tui.texts import welcome


@pytest.mark.parametrize(
    ("options", "said", "not_said"),
    [
        (AgentOptions(sources={"saved": ("~/saved",)}, web=False),
         "reads saved pages (not the web)", "searches the web"),
        (AgentOptions(sources={"docs": ("~/notes",), "saved": ("~/saved",)}, web=False),
         "reads your documents and saved pages (not the web)", "searches the web"),
        (AgentOptions(sources={"saved": ("~/saved",)}),
         "searches the web, reads the pages and saved pages", "not the web"),
        (AgentOptions(), "searches the web, reads the pages,", "saved"),
    ],
    ids=["saved-only", "docs-and-saved", "saved-beside-the-web", "web"],
)  # fmt: skip
def test_the_welcome_says_which_sources_a_question_reads(
    options: AgentOptions, said: str, not_said: str
) -> None:
    text = " ".join(welcome(options, kept=True).split())
    assert said in text and not_said not in text
    if options.source("saved"):
        assert f"saved pages: ~/saved{'' if options.web else ' only'}" in text
