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
        "**Sources cited**\n\n- [1] [The \\[Verge\\]\\[2J](<https://a.test/x>)\n"
        "- [2] [https://b.test/](<https://b.test/>)\n\n"
        '> unsupported: "Bananas." cites [2]\n\n## And then?\n\n_No answer (stopped or failed)._\n'
    )


def test_the_sources_the_answer_cites_come_first_under_their_own_numbers() -> None:
    """A person reading ``history show`` wants what the answer rests on first: [2] is
    cited, [1] only read; the numbers stay the answer's (a Markdown numbered list out of
    order would be renumbered, so they are written out). On 3afc709: 1., then 2."""
    claim = {"sentence": "Maps.", "cited": [2], "citations": [], "support": 0.5}
    claim |= {"unsupported": False, "missing": [], "checked": True}
    answer = MESSAGES[0]["answers"][0] | {"text": "Maps [2].\n", "flags": [], "citations": [claim]}
    text = conversation_markdown("T", [{"role": "user", "content": "Q?", "answers": [answer]}])
    sources = text.split("**Sources cited**\n\n")[1]
    assert sources.startswith("- [2] [https://b.test/](<https://b.test/>)\n\n**Read, not cited**")
    assert sources.index("- [2]") < sources.index("- [1] [The")
    nothing = answer | {"citations": [claim | {"cited": []}]}
    text = conversation_markdown("T", [{"role": "user", "content": "Q?", "answers": [nothing]}])
    assert "**Sources** (read; the answer cites none)\n\n- [1] " in text


def test_export_names_are_readable_and_safe(tmp_path: Path) -> None:
    assert export_path(tmp_path, 7, "What is HtmlRAG? / ../etc").name == (
        "conversation-7-what-is-htmlrag-etc.md"
    )
    assert export_path(tmp_path, 8, "???").name == "conversation-8.md"


# -- raw HTML (issue 31): what a page title or an answer holds is text, never markup

HOSTILE_TITLE = '<img src=x onerror="alert(1)">Title'
HOSTILE_ANSWER = (
    'See <a href="javascript:alert(1)">here</a> [1].\n\n<iframe src=javascript:alert(2)>\n\n'
    "<!-- hidden --> <script>alert(3)</script> <svg onload=alert(4)> <?php x ?> <![CDATA[x]]>\n"
    "\\\\<b>escaped backslash, live tag</b> and `<kbd>` in code, then ``a ` <b>`` too.\n\n"
    "```html\n<div>kept as code</div>\n```\n\n    <p>indented</p>\n\n"
    "- item `one\n<img src=y onerror=alert(5)>` across lines\n"
    "# heading `a\n<img src=z onerror=alert(6)>`\n"
)


def hostile_messages() -> list[dict]:
    return [
        {
            "role": "user",
            "content": "What is <img src=q onerror=alert(7)>?",
            "answers": [
                {
                    "text": HOSTILE_ANSWER,
                    "sources": [{"number": 1, "url": "https://a.test/x", "title": HOSTILE_TITLE}],
                    "flags": ["unsupported: <b onmouseover=alert(8)>x</b>"],
                    "citations": [  # a backed sentence and its quote, both from the web
                        {
                            "sentence": "It is <svg onload=alert(9)> [1].",
                            "cited": [1],
                            "citations": [
                                {
                                    "source": 1,
                                    "url": "https://a.test/x",
                                    "quote": "It is <script>alert(10)</script> <svg onload=x>",
                                    "score": 0.9,
                                    "backs": True,
                                    "added": False,
                                }
                            ],
                            "support": 0.9,
                            "unsupported": False,
                            "missing": [],
                            "checked": True,
                        }
                    ],
                }
            ],
        }
    ]


def raw_html(markdown: str) -> list[str]:
    """The raw HTML a CommonMark renderer finds in ``markdown`` (markdown-it, HTML on)."""
    from markdown_it import MarkdownIt

    found = []
    for token in MarkdownIt("commonmark").parse(markdown):
        if token.type == "html_block":
            found.append(token.content)
        for child in token.children or []:
            if child.type == "html_inline":
                found.append(child.content)
    return found


def test_raw_html_from_titles_questions_answers_and_flags_is_escaped() -> None:
    text = conversation_markdown(HOSTILE_TITLE, hostile_messages())
    assert raw_html(text) == []
    for live in ("<img", "<a href", "<iframe", "<script", "<svg", "<b onmouseover", "<!--"):
        # ``\<`` is a backslash-escaped "<": text, as the evidence quotes write it.
        assert live not in text.replace("`<kbd>`", "").replace("\\<", ""), live
    assert '&lt;img src=x onerror="alert(1)">Title' in text  # readable, as text
    assert "`<kbd>`" in text and "``a ` <b>``" in text  # code stays code
    assert "```html\n<div>kept as code</div>\n```" in text
    assert '"It is \\<script\\>alert(10)\\</script\\>' in text  # the quote, as text


def test_an_answer_without_markup_is_unchanged() -> None:
    answer = "1 < 2 and 3 > 2 [1]; a<-b, x <= y, <3, `<tag>` in code.\n"
    messages = [{**hostile_messages()[0], "content": "Q?"}]
    messages[0]["answers"][0] = {**messages[0]["answers"][0], "text": answer, "flags": []}
    assert answer.strip() in conversation_markdown("T", messages)
