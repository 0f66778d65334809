"""Selecting an answer and its sources in the chat app: the sources panel follows the
selected answer, a citation highlights its source, and pages open in the browser (http and
https only). ``ChatApp`` inherits these handlers and actions."""

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


class SelectionActions(App[None]):
    """The answer whose sources are shown, and what the user can do with them."""

    selected: AnswerView | None = None

    def preview_sources(self, view: AnswerView, sources: Sequence[Source]) -> None:
        """The sources of an answer still to come, readable while the reader prefills; the
        answer's own list replaces them when it ends."""
        view.sources, view.cited = tuple(sources), None
        if self.selected is view:
            self.query_one(SourcesPanel).show(view.sources)

    def select(self, view: AnswerView, number: int | None = None) -> None:
        self.selected = view
        panel = self.query_one(SourcesPanel)
        panel.show(view.sources, view.cited)
        if number is not None and not panel.highlight(number):
            self.notify(f"This answer has no source [{number}].", severity="warning")

    def on_answer_view_selected(self, message: AnswerView.Selected) -> None:
        self.select(message.view, message.number)

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        numbers = cited_numbers(event.href)
        view = next((a for a in event.markdown.ancestors if isinstance(a, AnswerView)), None)
        if numbers and view is not None:
            self.select(view, numbers[0])
        elif openable(event.href):
            self.open_page(event.href)

    def on_sources_panel_open(self, message: SourcesPanel.Open) -> None:
        self.open_page(message.source.url)

    def on_sources_panel_copy(self, message: SourcesPanel.Copy) -> None:
        self.copy_to_clipboard(message.source.url)
        self.notify(f"Copied {terminal_safe(message.source.url)}")

    def open_page(self, url: str) -> None:
        if not openable(url):
            self.notify("Only http and https pages are opened.", severity="warning")
            return
        webbrowser.open(url, new=2)
        self.notify(f"Opened {terminal_safe(url)}")

    def action_copy_answer(self) -> None:
        view = self.selected
        if view is None or not view.text:
            self.notify("No answer to copy yet.", severity="warning")
            return
        self.copy_to_clipboard(view.text)
        self.notify("Answer copied.")
