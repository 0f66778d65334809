"""The chat app: a transcript, the sources of the selected answer, the saved conversations.

The agent runs in an async worker on the app's loop; model loading and the CPU-heavy stages
run in threads. Its events arrive as ``PipelineEvent`` messages, handled in order, so the
answer streams into its view and the progress line follows every stage. A question ends
with one ``QuestionEnded`` message (answered, stopped, or failed), after its last delta.
Selecting answers and their sources lives in ``selection.py``, the wording in ``texts.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Markdown, Static
from textual.worker import Worker

from htmlrag_chat.agent.loop import Agent
from htmlrag_chat.assembly.wiring import AgentOptions, build_agent
from htmlrag_chat.base.errors import UserError
from htmlrag_chat.base.events import (
    AnswerDelta,
    AnswerRetracted,
    Event,
    Notice,
    Skipped,
    SourcesReady,
)
from htmlrag_chat.base.progress import PipelineStatus, Status, event_line
from htmlrag_chat.base.safety import terminal_safe
from htmlrag_chat.conversations.session import ChatSession
from htmlrag_chat.reader.settings import ReaderSettings
from htmlrag_chat.store.db import Store
from htmlrag_chat.tui.history import HistoryActions
from htmlrag_chat.tui.keys import KEYS, PALETTE, help_rows
from htmlrag_chat.tui.messages import PipelineEvent, QuestionEnded, QuestionResult
from htmlrag_chat.tui.panels import HistoryPanel, SourcesPanel
from htmlrag_chat.tui.panes import BREAKPOINTS, Panes
from htmlrag_chat.tui.readers import ReaderCommands
from htmlrag_chat.tui.research import ResearchRun, research_question, research_typed
from htmlrag_chat.tui.screens import HelpScreen
from htmlrag_chat.tui.searching import SearchCommands
from htmlrag_chat.tui.selection import Selection
from htmlrag_chat.tui.texts import answer_meta, describe, header_line, quit_help, welcome
from htmlrag_chat.tui.transcript import (
    AnswerView,
    ErrorView,
    NoteView,
    QuestionView,
    Transcript,
    Welcome,
)

READY = "ready: ask a question"
RECORDED_SHOWN = 3  # a recording's questions the welcome names, the last searched first


class PromptInput(Input):
    """The question box; its Enter binding is shown in the footer as "Send"."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "submit", "Send")]


class ChatApp(App[None]):
    TITLE = "htmlrag-chat"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {ReaderCommands, SearchCommands}
    AUTO_FOCUS = "#prompt"
    HORIZONTAL_BREAKPOINTS = BREAKPOINTS  # the side panes fold on narrow terminals
    BINDINGS: ClassVar[list[BindingType]] = list(KEYS)

    def __init__(
        self,
        options: AgentOptions,
        cache: Store,
        session: ChatSession,
        *,
        export_dir: Path,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        super().__init__()
        self.options = options
        self.search = (
            options.search
        )  # what a new conversation searches with (the palette's hold until one)
        self.cache = cache
        self.session = session
        self.export_dir = export_dir
        self.clock = clock  # snapshot tests freeze it, so elapsed times do not vary
        self.status: Status = PipelineStatus()
        self.started = 0.0
        self.question: Worker[None] | None = None
        self.selection = Selection(self)  # the answer whose sources are shown
        self.history = HistoryActions(self)  # the History pane's reopen, rename, delete
        self._agent: asyncio.Future[Agent] | None = None
        self._current: AnswerView | None = None
        self._research: ResearchRun | None = None  # the research running, if one is

    # -- layout

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="body"):
            yield HistoryPanel()
            with Vertical(id="chat"):
                yield Transcript(Welcome(self.welcome()))
                yield Static(id="status")
                yield PromptInput(placeholder="Ask anything…", id="prompt")
            yield SourcesPanel()
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.sub_title = self.header_line()
        self.history.refresh()
        self.set_interval(0.1, self.tick)
        self.run_worker(self.preload(), group="load", exit_on_error=False)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A toast whose message is always text, never Textual markup: it quotes source
        URLs, file names and a server's words, and a URL holding ``[@click=...]`` would
        otherwise be an action run by a click. ``markup`` is only Textual's signature:
        nothing in the app writes toasts as markup."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def welcome(self) -> str:
        """The welcome text; over a recording, naming the questions it holds (the last
        few searched), since it answers those alone."""
        recorded = self.cache.recent_queries(RECORDED_SHOWN) if self.options.replay else []
        return welcome(self.options, self.session.kept, recorded)

    def header_line(self) -> str:
        return header_line(self.session.title, self.cache.path.name if self.options.replay else "")

    # -- the agent

    async def preload(self, switched: bool = False) -> None:
        """Load the models as soon as the app is up (or the reader is switched), so the
        first answer comes sooner; a failure is shown in the chat (unless a question is
        waiting to show it itself)."""
        self.set_status("loading the reader and the pruning models…")
        try:
            agent = await self.agent()
        except Exception as error:
            if not self.running:
                text = describe(error, self.options.reader.model, "load the reader")
                await self.transcript.mount(ErrorView(text))
                self.set_status("")
            return
        if self.running:
            return
        if switched:
            self.set_status(f"ready: {agent.reader.label} answers from now on")
        elif not self.session.turns:
            self.set_status(READY)

    async def agent(self) -> Agent:
        """The agent, loaded in a thread the first time; after a failure, the next call
        tries again (the user may have started the server meanwhile)."""
        if self._agent is None:
            self._agent = asyncio.ensure_future(
                asyncio.to_thread(build_agent, self.options, self.cache, self.post_event)
            )
        future = self._agent
        try:
            agent = await asyncio.shield(future)
        except Exception:
            if self._agent is future:
                self._agent = None
            raise
        if self._agent is future:  # not replaced by a switch meanwhile
            self.title = f"{self.TITLE} · {terminal_safe(agent.reader.label)}"
        return agent

    def switch_reader(self, reader: ReaderSettings) -> None:
        """Answer from now on with ``reader`` (a command palette choice): the agent is
        rebuilt with it, and the header names it once it is ready."""
        if self.running:
            self.notify("A question is running: Esc stops it first.", severity="warning")
            return
        self.options = replace(self.options, reader=reader)
        self._agent = None
        self.title = self.TITLE
        self.run_worker(self.preload(switched=True), group="load", exit_on_error=False)

    def post_event(self, event: Event) -> None:
        """The agent's event sink: thread-safe, delivered to the app in order."""
        self.post_message(PipelineEvent(event))

    # -- asking

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def running(self) -> bool:
        """A question is on: from Enter until its ``QuestionEnded`` has been handled."""
        return self._current is not None

    @on(Input.Submitted, "#prompt")
    async def send(self, event: Input.Submitted) -> None:
        question = event.value.strip()
        if not question:
            return
        if self.running:
            self.notify("A question is running: Esc stops it.", severity="warning")
            return
        research = research_question(question)
        if research == "":
            return self.notify("Give the question after /research.", severity="warning")
        try:
            message_id = self.session.question_asked(research or question)
        except UserError as error:
            await self.transcript.mount(ErrorView(f"The question was not saved: {error}"))
            return
        event.input.clear()
        self.sub_title = self.header_line()
        self.history.refresh()
        view = AnswerView(meta="…")
        run = self._research = ResearchRun(self, view, research) if research else None
        await self.transcript.mount_all(run.views() if run else [QuestionView(question), view])
        self.status = run.status if run else PipelineStatus(stage="load")
        work = run.run(message_id) if run else self.answer(question, view, message_id)
        self._current = view
        self.selection.select(view)
        self.started = self.clock()
        self.question = self.run_worker(work, group="question", exit_on_error=False)

    async def answer(self, question: str, view: AnswerView, message_id: int) -> None:
        try:
            agent = await self.agent()
            agent.search_with(self.options.search)  # the palette's, when it changed them
            answer = await agent.ask(question, list(self.session.turns))
        except asyncio.CancelledError:
            self.post_message(QuestionEnded(view, message_id, QuestionResult()))
            raise
        except Exception as error:
            self.post_message(QuestionEnded(view, message_id, QuestionResult(error=error)))
            return
        self.post_message(QuestionEnded(view, message_id, QuestionResult(answer=answer)))

    async def on_pipeline_event(self, message: PipelineEvent) -> None:
        event = message.event
        self.status.apply(event)
        if isinstance(event, AnswerDelta):
            if self._current is not None:
                await self._current.write(event.text, event.quoted)
        elif isinstance(event, AnswerRetracted) and self._current is not None:
            await self._current.retract()
        elif isinstance(event, Notice) or (isinstance(event, Skipped) and event.kind == "query"):
            await self._note(event_line(event) or "")
        elif isinstance(event, SourcesReady) and self._current is not None:
            self.selection.preview_sources(self._current, event.sources)
        if self._research is not None:
            await self._research.on_event(event)

    async def _note(self, text: str) -> None:
        note = NoteView(text)
        if self._current is not None and self._current.parent is self.transcript:
            await self.transcript.mount(note, before=self._current)
        else:
            await self.transcript.mount(note)

    async def on_question_ended(self, message: QuestionEnded) -> None:
        view, outcome = message.view, message.outcome
        elapsed = self.clock() - self.started
        if outcome.answer is not None:
            answer = outcome.answer
            meta = answer_meta(answer, elapsed)
            await view.finish(
                meta, answer.sources, answer.markdown, answer.cited_numbers, answer.claims
            )
            try:
                self.session.answered(message.message_id, answer)
            except UserError as error:
                await self.transcript.mount(ErrorView(f"The answer was not saved: {error}"))
            self.set_status(f"answered in {elapsed:.1f} s")
        elif outcome.error is not None:  # the question stays in the history, unanswered
            await view.finish(
                f"failed after {elapsed:.1f} s: it stays in the history, with no answer"
            )
            failure = ErrorView(describe(outcome.error, self.options.reader.model))
            await self.transcript.mount(failure, after=view)
            self.set_status("failed: see the message above")
        else:
            await view.finish(
                f"stopped after {elapsed:.1f} s: the question stays in the history, with no "
                "answer; follow-ups do not use it"
            )
            self.set_status("stopped")
        if self.selection.selected is view:
            self.selection.select(view)
        self.history.refresh()
        self._research = None
        self._current = None  # last: until here the question still counts as running

    def tick(self) -> None:
        if self.running:
            self.set_status(self.status.line(self.clock() - self.started))

    def set_status(self, text: str) -> None:
        self.query_one("#status", Static).update(Content(terminal_safe(text)))

    # -- conversations

    # -- the History pane: Textual calls the app's methods; the work is ``HistoryActions``'s

    @on(HistoryPanel.OptionSelected)
    async def reopen(self, event: HistoryPanel.OptionSelected) -> None:
        if event.option_id is not None:
            await self.history.reopen(int(event.option_id))

    def on_history_panel_rename(self, message: HistoryPanel.Rename) -> None:
        self.history.rename(message.conversation_id)

    def on_history_panel_delete(self, message: HistoryPanel.Delete) -> None:
        self.history.delete(message.conversation_id)

    # -- actions (keys, footer, command palette)

    def action_cancel(self) -> None:
        if self.question is not None and self.question.is_running:
            self.question.cancel()
        else:
            self.panes.by_width()
            self.query_one("#prompt").focus()

    async def action_new_chat(self) -> None:
        await self.history.new_chat()

    # -- selection: Textual calls the app's methods; the work is ``Selection``'s

    def on_answer_view_selected(self, message: AnswerView.Selected) -> None:
        self.selection.select(message.view, message.number)

    def on_markdown_link_clicked(self, event: Markdown.LinkClicked) -> None:
        self.selection.follow_link(event)

    def on_sources_panel_open(self, message: SourcesPanel.Open) -> None:
        self.selection.open_page(message.source.url)

    def on_sources_panel_copy(self, message: SourcesPanel.Copy) -> None:
        self.selection.copy_url(message.source.url)

    def action_copy_answer(self) -> None:
        self.selection.copy_answer()

    @property
    def panes(self) -> Panes:
        return Panes(self.query_one("#body"))

    def action_sources(self) -> None:
        if not self.panes.toggle(self.query_one(SourcesPanel), "sources"):
            self.query_one("#prompt").focus()

    def action_history(self) -> None:
        if not self.panes.toggle(self.query_one(HistoryPanel), "history"):
            self.query_one("#prompt").focus()

    def action_export(self) -> None:
        try:
            path = self.session.export(self.export_dir)
        except (LookupError, OSError, UserError) as error:
            self.notify(f"Not exported: {error}", severity="error")
            return
        self.notify(f"Exported to {path}")

    def action_help(self) -> None:
        self.push_screen(HelpScreen(help_rows(quit_help(self.session.kept))))

    async def action_research(self) -> None:
        await research_typed(self.query_one(PromptInput))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name, what, action in PALETTE:
            yield SystemCommand(name, what, getattr(self, f"action_{action}"))
