"""Selecting an answer and its sources in the chat app: the sources panel follows the
selected answer, a citation highlights its source, and pages open in the browser (http and
https only).

``Selection`` is a part the app holds, not a base class: Textual delivers messages and key
actions to the app's own methods, which hand them to it in one line each, so the app's
question loop and this module each keep one job.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Sequence

from textual.app import App
from textual.widgets import Markdown

from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.reader import Source
from htmlrag_chat.tui.markdown import cited_numbers
from htmlrag_chat.tui.panels import SourcesPanel, openable
from htmlrag_chat.tui.transcript import AnswerView


class Selection:
    """The answer whose sources are shown, and what the user can do with them."""

    def __init__(self, app: App[None]) -> None:
        self.app = app
        self.selected: AnswerView | None = None

    def preview_sources(self, view: AnswerView, sources: Sequence[Source]) -> None:
        """The sources of an answer still to come, readable while the reader prefills; the
        answer's own list replaces them when it ends."""
        view.sources, view.cited = tuple(sources), None
        if self.selected is view:
            self.app.query_one(SourcesPanel).show(view.sources)

    def select(self, view: AnswerView, number: int | None = None) -> None:
        self.selected = view
        panel = self.app.query_one(SourcesPanel)
        panel.show(view.sources, view.cited)
        if number is not None and not panel.highlight(number):
            self.app.notify(f"This answer has no source [{number}].", severity="warning")

    def follow_link(self, event: Markdown.LinkClicked) -> None:
        """A citation in an answer selects its source; any other link opens its page."""
        numbers = cited_numbers(event.href)
        view = next((a for a in event.markdown.ancestors if isinstance(a, AnswerView)), None)
        if numbers and view is not None:
            self.select(view, numbers[0])
        elif openable(event.href):
            self.open_page(event.href)

    def open_page(self, url: str) -> None:
        if not openable(url):
            self.app.notify("Only http and https pages are opened.", severity="warning")
            return
        webbrowser.open(url, new=2)
        self.app.notify(f"Opened {terminal_safe(url)}")

    def copy_url(self, url: str) -> None:
        self.app.copy_to_clipboard(url)
        self.app.notify(f"Copied {terminal_safe(url)}")

    def copy_answer(self) -> None:
        view = self.selected
        if view is None or not view.text:
            self.app.notify("No answer to copy yet.", severity="warning")
            return
        self.app.copy_to_clipboard(view.text)
        self.app.notify("Answer copied.")
