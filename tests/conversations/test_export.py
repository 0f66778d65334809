"""A conversation exported as Markdown."""

from __future__ import annotations

from pathlib import Path

from htmlrag_chat.conversations.export import conversation_markdown, export_path

MESSAGES = [
    {
        "role": "user",
        "content": "Which framework?",
        "answers": [
            {
                "text": "ARKit [1].\n",
                "sources": [
                    {"number": 1, "url": "https://a.test/x", "title": "The [Verge]\x1b[2J"},
                    {"number": 2, "url": "https://b.test/", "title": ""},
                ],
                "flags": ['unsupported: "Bananas." cites [2]'],
                "citations": [
                    {
                        "sentence": "ARKit **maps** faces.",
                        "cited": [1],
                        "citations": [
                            {
                                "source": 1,
                                "url": "https://a.test/x",
                                "score": 0.9,
                                "quote": "It uses ARKit [3] to map [a face](javascript:x).",
                                "backs": True,
                                "added": False,
                            }
                        ],
                        "support": 0.9,
                        "unsupported": False,
                        "missing": [],
                        "checked": True,
                    },
                    {"sentence": "Bananas.", "sources": [2], "support": 0.1, "supported": False},
                ],
            }
        ],
    },
    {"role": "user", "content": "And then?", "answers": []},
]


def test_questions_answers_evidence_sources_and_flags_in_order() -> None:
    # A quote is page text: its "[3]" cites nothing and its link is no link.
    assert conversation_markdown("Frameworks", MESSAGES) == (
        "# Frameworks\n\n## Which framework?\n\nARKit [1].\n\n**Evidence**\n\n"
        "- ARKit \\*\\*maps\\*\\* faces.\n"
        '  - \\[1\\] "It uses ARKit \\[3\\] to map \\[a face\\]."\n\n'
        "**Sources**\n\n"
        "1. [The \\[Verge\\]\\[2J](<https://a.test/x>)\n2. [https://b.test/](<https://b.test/>)\n\n"
        '> unsupported: "Bananas." cites [2]\n\n## And then?\n\n_No answer (stopped or failed)._\n'
    )


def test_export_names_are_readable_and_safe(tmp_path: Path) -> None:
    assert export_path(tmp_path, 7, "What is HtmlRAG? / ../etc").name == (
        "conversation-7-what-is-htmlrag-etc.md"
    )
    assert export_path(tmp_path, 8, "???").name == "conversation-8.md"
