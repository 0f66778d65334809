"""A report exported as one HTML file: self-contained, every sentence with its evidence at
hand, and everything from pages and models shown as text."""

from __future__ import annotations

from html.parser import HTMLParser

from htmlrag_chat.agent.answer import Answer
from htmlrag_chat.agent.research import Research
from htmlrag_chat.base.sources import Source
from htmlrag_chat.evidence.claims import Claim, Quote
from htmlrag_chat.research.page import POLICY, report_html
from htmlrag_chat.research.report import ANSWERED, NOTHING, PartResult, Report

HOSTILE = '<img src=x onerror=alert(1)><script>alert("x")</script>'
TOWER = "https://tower.example/history"


def hostile_report() -> Report:
    sources = [
        Source(1, TOWER, f"Tower \x1b[31m{HOSTILE}", "<p>It opened in 1889.</p>", "x"),
        Source(2, "javascript:alert(1)", "Evil </a><a href=javascript:alert(2)>", "<p>y</p>", "y"),
        Source(3, "file:///home/me/notes.md", "My notes", "<p>z</p>", "z"),
    ]
    claims = [
        Claim(
            f"The tower {HOSTILE} opened in 1889.",
            (1,),
            (Quote(1, f'It opened in 1889 "</q>{HOSTILE}', 0.9, True),),
        ),
        Claim(
            "It is red [link](javascript:alert(3)).",
            (2,),
            (Quote(2, "blue", 0.1, False),),
            0.1,
            False,
        ),
        Claim("Notes agree.", (3,), (Quote(3, "agree", 0.9, True),)),
    ]
    text = f"The tower {HOSTILE} opened in 1889 [1]. It is red [link](javascript:alert(3)) [2]. "
    answer = Answer(
        "q", text + "Notes agree [3].", "openai", "m", claims, 0, [], Research(sources, rounds=1)
    )
    return Report.of(
        f"When did the tower open? {HOSTILE}",
        "openai",
        "m\u202e",
        [
            PartResult(1, f"When did it open? {HOSTILE}", ANSWERED, answer),
            PartResult(2, "Who painted it?", NOTHING, reason="no page held anything for it"),
        ],
    )


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_html_file_loads_nothing_and_shows_page_text_as_text() -> None:
    page = report_html(hostile_report())
    parser = Tags()
    parser.feed(page)
    tags = {tag for tag, _ in parser.tags}
    assert tags <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "section",
                    "span", "a", "ol", "ul", "li", "q", "small"}  # fmt: skip
    assert "script" not in tags and "img" not in tags
    assert f'content="{POLICY}"' in page and "default-src 'none'" in POLICY
    for tag, attrs in parser.tags:
        assert "src" not in attrs and not any(name.startswith("on") for name in attrs)
        href = attrs.get("href")
        if tag == "a":
            assert href is not None and href.startswith(("#", "https://tower.example/", "file:///"))
    assert "\x1b" not in page and "\u202e" not in page
    assert "&lt;script&gt;" in page


def test_each_sentence_has_its_evidence_as_a_tooltip_and_a_footnote() -> None:
    page = report_html(hostile_report())
    parser = Tags()
    parser.feed(page)
    spans = [attrs for tag, attrs in parser.tags if tag == "span" and "title" in attrs]
    tips = [str(attrs["title"]) for attrs in spans]
    assert any(tip.startswith('[1] "It opened in 1889') for tip in tips)
    assert any("! cites [2], but" in tip for tip in tips)  # the flag of the unbacked one
    notes = [attrs["href"] for tag, attrs in parser.tags if tag == "a" and "ev" in str(attrs)]
    assert notes == ["#ev-1-1", "#ev-1-2", "#ev-1-3"]
    assert page.count('<li id="ev-1-') == 3
    assert 'href="#ref-1"' in page and '<li id="ref-1">' in page
    assert "Nothing found: no page held anything for it" in page
