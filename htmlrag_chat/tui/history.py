"""The conversations in the chat app: a new one, and the History pane's actions (reopen a
conversation, rename it, delete it).

``HistoryActions`` is a part the app holds, as ``Selection`` is: Textual delivers the
pane's messages to the app's own methods, which hand them here in one line each.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.tui.panels import HistoryPanel, SourcesPanel
from htmlrag_chat.tui.screens import ConfirmScreen, RenameScreen
from htmlrag_chat.tui.searching import switch_search
from htmlrag_chat.tui.transcript import AnswerView, Welcome, stored_views

if TYPE_CHECKING:  # the app holds this part: its module imports this one
    from htmlrag_chat.tui.app import ChatApp

REOPENED = "reopened: a question now follows up this conversation"


class HistoryActions:
    """What the user does with the conversations: a new one, and those the History pane
    lists."""

    def __init__(self, app: ChatApp) -> None:
        self.app = app

    async def new_chat(self) -> None:
        app = self.app
        if app.running:
            app.notify("A question is running: Esc stops it first.", severity="warning")
            return
        app.session.new()
        if app.options.search != app.search:
            switch_search(app, app.search)
        await app.transcript.remove_children()
        await app.transcript.mount(Welcome(app.welcome()))
        app.query_one(SourcesPanel).show(())
        app.selection.selected = None
        app.set_status("")
        app.sub_title = app.header_line()
        self.refresh()
        app.query_one("#prompt").focus()

    def refresh(self) -> None:
        app = self.app
        panel = app.query_one(HistoryPanel)
        panel.show(app.session.conversations(), app.session.conversation, time.time())

    async def reopen(self, conversation_id: int) -> None:
        app = self.app
        if app.running:
            app.notify("A question is running: Esc stops it first.", severity="warning")
            return
        messages = app.session.open(conversation_id)
        await app.transcript.remove_children()
        await app.transcript.mount_all(stored_views(messages))
        answers = app.transcript.query(AnswerView)
        if answers:
            app.selection.select(answers.last())
        else:
            app.query_one(SourcesPanel).show(())
        app.sub_title = app.header_line()
        app.set_status(REOPENED)  # not the time of the chat shown before
        self.refresh()
        app.transcript.scroll_end(animate=False)
        app.query_one("#prompt").focus()

    def rename(self, conversation_id: int) -> None:
        app = self.app
        titles = {c["id"]: c["title"] for c in app.session.conversations()}

        def renamed(title: str | None) -> None:
            if title:
                app.session.rename(conversation_id, title)
                app.sub_title = app.header_line()
                self.refresh()

        app.push_screen(RenameScreen(titles.get(conversation_id, "")), renamed)

    def delete(self, conversation_id: int) -> None:
        app = self.app
        titles = {c["id"]: c["title"] for c in app.session.conversations()}
        title = terminal_safe(titles.get(conversation_id, ""))

        async def deleted(confirmed: bool | None) -> None:
            if not confirmed:
                return
            current = conversation_id == app.session.conversation
            if current and app.running:
                app.notify("A question is running in it: Esc stops it first.")
                return
            app.session.delete(conversation_id)
            if current:
                await app.action_new_chat()
            self.refresh()

        app.push_screen(ConfirmScreen(f"Delete “{title}” and its answers?"), deleted)
