"""Page text is data: in the app it cannot become console markup or escape sequences."""

from __future__ import annotations

import time
import webbrowser
from pathlib import Path
from typing import Any

import pytest
import textual.markup
from textual.widgets._toast import Toast

from htmlrag_chat.reader.literal import unescape_markdown
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.panels import SourcesPanel
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.tui.conftest import SIZE, answers, ask, make_app, options, run, wait_until

URL = "https://evil.example/page"
TITLE = "Free [bold red]prizes[/] \x1b[2J\x1b]0;pwned\x07 here"
PAGE = f"""<html><head><title>{TITLE}</title></head><body><article>
<h1>Prize draw rules</h1>
<p>The prize draw closes on Friday [@click=app.quit]quit[/] and winners are told by mail.</p>
<p>Every prize draw entry \x1b[31mneeds\x1b[0m a valid address \x9b2J and a phone number.</p>
</article></body></html>"""
QUESTION = "when does the prize draw close"


def test_markup_and_escapes_in_a_page_are_shown_as_text(tmp_path: Path) -> None:
    with Store.open(tmp_path / "evil.db") as store:
        store.put_search(
            QUESTION, [SearchResult(URL, TITLE, "")], region="wt-wt", safesearch="moderate",
            backend="test",
        )  # fmt: skip
        body = PAGE.encode("utf-8")
        store.put_page(
            FetchResult(
                URL, Outcome.OK, status=200, content_type="text/html", charset="utf-8",
                body=body, bytes=len(body), fetched_at=time.time(),
            )
        )  # fmt: skip

    async def scenario() -> None:
        with (
            Store.open(tmp_path / "evil.db", readonly=True) as cache,
            Store.open(tmp_path / "history.db") as history,
        ):
            app = make_app(cache, history, options(), tmp_path)
            async with app.run_test(size=SIZE) as pilot:
                await ask(pilot, QUESTION)
                (view,) = answers(app)
                # Quoted as it stands: escaped in the Markdown, shown verbatim on screen.
                assert "[@click=app.quit]quit[/]" in unescape_markdown(view.text)
                assert "[@click=app.quit]quit[/]" in app.export_screenshot()
                panel = app.query_one(SourcesPanel)
                prompt = str(panel.get_option_at_index(0).prompt)
                assert "[bold red]prizes[/]" in prompt
                screen = app.export_screenshot()
                assert "\x1b" not in screen and "\x9b" not in screen and "\x07" not in screen
                assert "[bold&#160;red]prizes[/]" in screen or "[bold red]prizes[/]" in screen
                assert app.is_running

    run(scenario())


CLICK = "[@click=app.screenshot('x.svg','{folder}')]Click_here[/]"


def test_no_string_from_a_page_is_ever_read_as_textual_markup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source URL holding ``[@click=app.screenshot(...)]`` once became a toast whose click
    ran the action and wrote a file. Every string Textual reads as markup is recorded here
    while the page's title, URL and text reach each widget they reach (the answer, the
    sources panel, the open and copy toasts, the status line, the notes): none of them may
    hold the page's words, and the toasts show the markup as text."""
    click = CLICK.format(folder=tmp_path / "shots")
    url = f"https://evil.example/{click}?q=[b]bold[/b]"
    title = f"Free [bold red]prizes[/] {click} [link=https://evil.example]here[/link]"
    question = "when does the prize draw close"
    with Store.open(tmp_path / "evil.db") as store:
        store.put_search(question, [SearchResult(url, title, "")], region="wt-wt",
                         safesearch="moderate", backend="test")  # fmt: skip
        body = PAGE.replace(TITLE, title).encode("utf-8")
        store.put_page(
            FetchResult(url, Outcome.OK, status=200, content_type="text/html", charset="utf-8",
                        body=body, bytes=len(body), fetched_at=time.time())
        )  # fmt: skip
    parsed: list[str] = []
    to_content = textual.markup.to_content

    def recorded(markup: str, *args: Any, **kwargs: Any) -> Any:
        parsed.append(markup)
        return to_content(markup, *args, **kwargs)

    monkeypatch.setattr(textual.markup, "to_content", recorded)
    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, new=0: opened.append(url))

    async def scenario() -> None:
        with (
            Store.open(tmp_path / "evil.db", readonly=True) as cache,
            Store.open(tmp_path / "history.db") as history,
        ):
            app = make_app(cache, history, options(), tmp_path)
            async with app.run_test(size=SIZE, notifications=True) as pilot:
                await ask(pilot, question)
                (view,) = answers(app)
                view.focus()
                await pilot.press("1")  # its source [1], highlighted in the sources panel
                await pilot.press("ctrl+l", "c", "o")  # copy the URL, open the page
                toasts = app.screen.query(Toast)
                await wait_until(pilot, lambda: len(toasts.nodes) >= 2, 10, "the toasts")
                assert app.clipboard == url and opened == [url]
                shown = [str(toast.render()) for toast in app.screen.query(Toast)]
                assert f"Copied {url}" in shown and f"Opened {url}" in shown
                assert "[bold red]prizes[/]" in str(
                    app.query_one(SourcesPanel).get_option_at_index(0).prompt
                )
                assert view.sources[0].title.startswith("Free [bold red]prizes[/]")
                assert app.is_running

    run(scenario())
    page_words = ("Click_here", "evil.example", "prizes", "Prize draw", "bold]bold")
    assert not [markup for markup in parsed if any(word in markup for word in page_words)]
    assert not (tmp_path / "shots").exists()
