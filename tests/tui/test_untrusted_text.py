"""Page text is data: in the app it cannot become console markup or escape sequences."""

from __future__ import annotations

import time
from pathlib import Path

from htmlrag_chat.reader.literal import unescape_markdown
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.panels import SourcesPanel
from htmlrag_chat.web.results import FetchResult, Outcome, SearchResult
from tests.tui.conftest import SIZE, answers, ask, make_app, options, run

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
